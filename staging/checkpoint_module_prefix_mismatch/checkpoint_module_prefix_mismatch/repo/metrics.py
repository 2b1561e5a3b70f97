"""Validation metrics."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def accuracy(logits: torch.Tensor, y: torch.Tensor) -> float:
    return float((logits.argmax(-1) == y).double().mean())


def log_loss(logits: torch.Tensor, y: torch.Tensor) -> float:
    return float(F.cross_entropy(logits.double(), y))
