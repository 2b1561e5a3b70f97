"""Learning-rate schedules as LambdaLR multipliers, by name."""

from __future__ import annotations

import math

import torch

from countcast.config.sections import OptimSection
from countcast.registry import Registry

SCHEDULES: Registry = Registry("schedule")


@SCHEDULES.register("constant")
def constant(total_steps: int, cfg: OptimSection):
    return lambda step: 1.0


@SCHEDULES.register("warmup_cosine", "cosine")
def warmup_cosine(total_steps: int, cfg: OptimSection):
    warm = max(0, cfg.warmup_steps)
    floor = cfg.min_lr_ratio

    def factor(step: int) -> float:
        if step < warm:
            return (step + 1) / warm
        t = (step - warm) / max(1, total_steps - warm)
        return floor + (1.0 - floor) * 0.5 * (1.0 + math.cos(math.pi * min(1.0, t)))
    return factor


@SCHEDULES.register("warmup_linear")
def warmup_linear(total_steps: int, cfg: OptimSection):
    warm = max(0, cfg.warmup_steps)

    def factor(step: int) -> float:
        if step < warm:
            return (step + 1) / warm
        return max(cfg.min_lr_ratio, 1.0 - (step - warm) / max(1, total_steps - warm))
    return factor


@SCHEDULES.register("step")
def step_decay(total_steps: int, cfg: OptimSection):
    """Warm-up, then the rate halves at 50% and again at 75% of training."""
    warm = max(0, cfg.warmup_steps)

    def factor(step: int) -> float:
        if step < warm:
            return (step + 1) / warm
        done = step / max(1, total_steps)
        return max(cfg.min_lr_ratio, 0.5 ** ((done >= 0.5) + (done >= 0.75)))
    return factor


def build_schedule(optimizer: torch.optim.Optimizer, total_steps: int, cfg: OptimSection):
    fn = SCHEDULES.get(cfg.schedule)(total_steps, cfg)
    return torch.optim.lr_scheduler.LambdaLR(optimizer, fn)
