"""Loss interface: per-row values, reduced by the loss object."""

from __future__ import annotations

import torch

from countcast.registry import Registry

LOSSES: Registry = Registry("loss")


class Loss:
    name = "loss"

    def __init__(self, reduction: str = "mean") -> None:
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(f"reduction must be mean, sum or none, not {reduction!r}")
        self.reduction = reduction

    def per_row(self, eta: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def __call__(self, eta: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        values = self.per_row(eta, y)
        if self.reduction == "mean":
            return values.mean()
        if self.reduction == "sum":
            return values.sum()
        return values


def build_loss(name: str, **kwargs) -> Loss:
    return LOSSES.build(name, **kwargs)
