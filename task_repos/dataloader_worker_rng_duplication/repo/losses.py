"""Losses of the reconstruction objective."""

from __future__ import annotations

import torch


def masked_mse(pred: torch.Tensor, target: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean squared error over the hidden positions only."""
    weight = mask.to(pred.dtype)
    return ((pred - target) ** 2 * weight).sum() / weight.sum().clamp_min(1.0)
