"""Scoring a model on a labelled split."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader

from metrics import MeanMeter, correct


def evaluate(model: nn.Module, loader: DataLoader) -> dict[str, float]:
    """Mean cross-entropy and accuracy of ``model`` over every batch of ``loader``."""
    loss, acc = MeanMeter(), MeanMeter()
    for features, labels in loader:
        logits = model(features)
        n = labels.shape[0]
        loss.update(F.cross_entropy(logits, labels).item(), n)
        acc.update(correct(logits, labels) / n, n)
    return {"loss": loss.mean, "acc": acc.mean}


def score_checkpoint(model: nn.Module, state: dict[str, torch.Tensor],
                     loaders: dict[str, DataLoader]) -> dict[str, dict[str, float]]:
    """Load a saved state into ``model`` and score it on the named splits."""
    model.load_state_dict(state)
    return {name: evaluate(model, loader) for name, loader in loaders.items()}
