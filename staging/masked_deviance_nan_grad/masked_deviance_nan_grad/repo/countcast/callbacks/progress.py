"""Progress lines every ``log_every`` steps."""

from __future__ import annotations

from countcast.callbacks.base import CALLBACKS, Callback
from countcast.utils.logging import get_logger

log = get_logger("train")


@CALLBACKS.register("progress")
class Progress(Callback):
    def __init__(self, member: int, every: int) -> None:
        self.member = member
        self.every = every

    @classmethod
    def from_config(cls, cfg, member: int) -> Progress:
        return cls(member, cfg.train.log_every)

    def on_step_end(self, ctx) -> None:
        rec = ctx.state.last
        if self.every and rec.step % self.every == 0:
            log.info("member %d step %4d/%d epoch %d loss %.5f |g| %.4g lr %.3g", self.member, rec.step,
                     ctx.state.total_steps, rec.epoch, rec.loss, rec.grad_norm, rec.lr)
