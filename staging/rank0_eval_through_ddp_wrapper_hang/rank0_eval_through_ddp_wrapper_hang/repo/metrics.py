"""Running metric accumulators."""

from __future__ import annotations

import torch


class Average:
    """Sample-weighted mean of per-batch values."""

    def __init__(self) -> None:
        self.total = 0.0
        self.count = 0

    def update(self, value: float, n: int) -> None:
        self.total += float(value) * n
        self.count += n

    @property
    def value(self) -> float:
        return self.total / max(self.count, 1)


def correct(logits: torch.Tensor, target: torch.Tensor) -> int:
    return int((logits.argmax(dim=1) == target).sum())
