"""Scoring a model on a split (eval mode, no autograd)."""

from __future__ import annotations

import torch
from torch import nn

from data import Split
from metrics import accuracy, log_loss


@torch.no_grad()
def evaluate(model: nn.Module, split: Split, batch_size: int = 256) -> dict[str, float]:
    was_training = model.training
    model.eval()
    logits = torch.cat([model(split.x[i:i + batch_size]) for i in range(0, len(split), batch_size)])
    model.train(was_training)
    return {"val_loss": round(log_loss(logits, split.y), 6), "val_acc": round(accuracy(logits, split.y), 6)}
