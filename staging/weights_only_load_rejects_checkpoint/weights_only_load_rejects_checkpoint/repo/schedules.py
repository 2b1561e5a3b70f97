"""Learning-rate schedules (per optimizer step)."""

from __future__ import annotations

import math

from torch.optim.lr_scheduler import LambdaLR

from registry import SCHEDULES


@SCHEDULES.register("warmup_cosine")
def warmup_cosine(optimizer, warmup_steps: int, total_steps: int) -> LambdaLR:
    def factor(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / max(1, warmup_steps)
        t = (step - warmup_steps) / max(1, total_steps - warmup_steps)
        return 0.5 * (1.0 + math.cos(math.pi * min(1.0, t)))
    return LambdaLR(optimizer, factor)
