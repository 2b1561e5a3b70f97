from __future__ import annotations

import math


class Mean:
    """Weighted running mean."""

    def __init__(self) -> None:
        self.total = 0.0
        self.weight = 0.0

    def update(self, value: float, weight: float = 1.0) -> None:
        self.total += float(value) * weight
        self.weight += weight

    @property
    def value(self) -> float:
        return self.total / self.weight if self.weight else math.nan

    def reset(self) -> None:
        self.total = self.weight = 0.0


class Ema:
    def __init__(self, decay: float = 0.9) -> None:
        self.decay = decay
        self.value: float | None = None

    def update(self, x: float) -> float:
        self.value = x if self.value is None else self.decay * self.value + (1 - self.decay) * x
        return self.value
