"""Keeps per-epoch means of the training loss (the dashboards plot them)."""

from __future__ import annotations

from countcast.callbacks.base import CALLBACKS, Callback
from countcast.utils.meters import Mean


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
