"""Holdout deviance during training (new in 0.9): the dashboards show each member's holdout curve,
so a member that starts to overfit is visible before the night ends."""

from __future__ import annotations

from countcast.callbacks.base import CALLBACKS, Callback
from countcast.data.loaders import eval_loader
from countcast.evaluation.evaluate import evaluate_batches
from countcast.utils.logging import get_logger

log = get_logger("monitor")


@CALLBACKS.register("holdout_monitor")
class HoldoutMonitor(Callback):
    def __init__(self, member: int, every: int, batch_size: int) -> None:
        self.member = member
        self.every = every
        self.batch_size = batch_size
        self.loader = None

    @classmethod
    def from_config(cls, cfg, member: int) -> HoldoutMonitor:
        return cls(member, cfg.train.eval_every, cfg.train.eval_batch_size)

    def on_fit_start(self, ctx) -> None:
        self.loader = eval_loader(ctx.holdout, self.batch_size) if self.every > 0 else None

    def on_step_end(self, ctx) -> None:
        if self.loader is None or ctx.state.step % self.every:
            return
        value = evaluate_batches(ctx.model, self.loader)["deviance"]
        ctx.state.log_metric("holdout_deviance", value)
        log.debug("member %d step %d: holdout deviance %.5f", self.member, ctx.state.step, value)
