"""Learning-rate schedules (stepped once per optimiser step)."""

from __future__ import annotations

import torch


def linear_warmup(optimizer: torch.optim.Optimizer, warmup_steps: int) -> torch.optim.lr_scheduler.LambdaLR:
    """Linear warm-up to the base learning rate over ``warmup_steps`` steps, then constant."""

    def factor(step: int) -> float:
        if warmup_steps <= 0:
            return 1.0
        return min(1.0, (step + 1) / warmup_steps)

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
