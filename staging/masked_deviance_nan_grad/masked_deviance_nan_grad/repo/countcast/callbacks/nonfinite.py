"""Stop a member whose loss is no longer finite: its weights are lost and every later step would
only spread NaN. The nightly job treats that as a failed run."""

from __future__ import annotations

import math

from countcast.callbacks.base import CALLBACKS, Callback
from countcast.training.state import TrainingDiverged


@CALLBACKS.register("nonfinite_guard")
class NonFiniteGuard(Callback):
    def __init__(self, member: int, window: int = 3) -> None:
        self.member = member
        self.window = window

    @classmethod
    def from_config(cls, cfg, member: int) -> NonFiniteGuard:
        return cls(member)

    def on_step_end(self, ctx) -> None:
        rec = ctx.state.last
        if rec is not None and not math.isfinite(rec.loss):
            recent = "; ".join(f"step {r.step} loss {r.loss:.5g} |g| {r.grad_norm:.4g} lr {r.lr:.3g}"
                               for r in ctx.state.history[-self.window:])
            raise TrainingDiverged(f"member {self.member}: non-finite loss at step {rec.step} "
                                   f"(epoch {rec.epoch}); last steps: {recent}")
