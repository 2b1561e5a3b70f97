"""Running averages for losses and accuracy."""

from __future__ import annotations

import torch


class Mean:
    def __init__(self) -> None:
        self.total = 0.0
        self.count = 0

    def update(self, value: float, n: int = 1) -> None:
        self.total += value * n
        self.count += n

    def compute(self) -> float:
        return self.total / max(self.count, 1)


def correct(logits: torch.Tensor, labels: torch.Tensor) -> int:
    return int((logits.argmax(dim=-1) == labels).sum())
