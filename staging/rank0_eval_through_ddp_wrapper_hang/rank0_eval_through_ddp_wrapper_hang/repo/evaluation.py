"""Validation metrics of a model over a loader."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader

from metrics import Average, correct


def evaluate(model: torch.nn.Module, loader: DataLoader) -> dict[str, float]:
    was_training = model.training
    model.eval()
    loss, hits, seen = Average(), 0, 0
    for x, y in loader:
        logits = model(x)
        loss.update(F.cross_entropy(logits, y).item(), len(y))
        hits += correct(logits, y)
        seen += len(y)
    model.train(was_training)
    return {"val_loss": loss.value, "val_acc": hits / max(seen, 1)}
