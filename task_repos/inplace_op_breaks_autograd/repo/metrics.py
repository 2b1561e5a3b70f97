"""Running metrics."""

from __future__ import annotations

import torch


class RunningMean:
    """Sample-weighted mean of a per-batch quantity."""

    def __init__(self) -> None:
        self.total = 0.0
        self.count = 0

    def update(self, value: float, n: int) -> None:
        self.total += value * n
        self.count += n

    @property
    def mean(self) -> float:
        return self.total / max(self.count, 1)


def correct(logits: torch.Tensor, labels: torch.Tensor) -> int:
    return int((logits.argmax(dim=1) == labels).sum())
