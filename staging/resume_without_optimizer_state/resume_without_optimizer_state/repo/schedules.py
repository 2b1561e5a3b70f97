"""Learning-rate multipliers by name (``cfg.schedule``), for a LambdaLR."""

from __future__ import annotations

import math

from config import TrainConfig
from registry import Registry

SCHEDULES = Registry("schedule")


class WarmupCosine:
    """Linear warmup to 1 over ``warmup`` steps, then cosine decay to ``floor``."""

    def __init__(self, warmup: int, total: int, floor: float) -> None:
        self.warmup, self.total, self.floor = warmup, total, floor

    def __call__(self, step: int) -> float:
        if step < self.warmup:
            return (step + 1) / self.warmup
        progress = min(1.0, (step - self.warmup) / max(1, self.total - self.warmup))
        return self.floor + (1.0 - self.floor) * 0.5 * (1.0 + math.cos(math.pi * progress))


@SCHEDULES.register("warmup_cosine")
def _warmup_cosine(cfg: TrainConfig) -> WarmupCosine:
    return WarmupCosine(cfg.warmup_steps, cfg.steps, cfg.min_lr_ratio)


@SCHEDULES.register("constant")
def _constant(cfg: TrainConfig):
    return lambda step: 1.0
