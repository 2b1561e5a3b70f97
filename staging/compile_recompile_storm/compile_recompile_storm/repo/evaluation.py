"""Validation: loss and accuracy over the validation loader."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from metrics import Mean, correct


@torch.no_grad()
def evaluate(net: torch.nn.Module, loader) -> dict[str, float]:
    was_training = net.training
    net.eval()
    loss, acc = Mean(), Mean()
    for batch in loader:
        logits = net(batch.events, batch.mask)
        loss.update(float(F.cross_entropy(logits, batch.labels)), len(batch))
        acc.update(correct(logits, batch.labels) / len(batch), len(batch))
    net.train(was_training)
    return {"val_loss": loss.compute(), "val_acc": acc.compute()}
