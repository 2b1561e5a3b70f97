"""Keeps per-epoch means of the training loss (the dashboards plot them)."""

from __future__ import annotations

import math

from countcast.callbacks.base import CALLBACKS, Callback


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


@CALLBACKS.register("history")
class EpochHistory(Callback):
    def __init__(self) -> None:
        self.mean = Mean()

    @classmethod
    def from_config(cls, cfg, member: int) -> EpochHistory:
        return cls()

    def on_epoch_start(self, ctx) -> None:
        self.mean.reset()

    def on_step_end(self, ctx) -> None:
        self.mean.update(ctx.state.last.loss)

    def on_epoch_end(self, ctx) -> None:
        ctx.state.log_metric("epoch_loss", self.mean.value)
