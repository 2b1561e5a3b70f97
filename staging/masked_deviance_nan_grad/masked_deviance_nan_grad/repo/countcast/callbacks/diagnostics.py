"""Opt-in diagnostics callbacks (``--set extra_callbacks=step_timer,grad_stats``)."""

from __future__ import annotations

import math
import time

from countcast.callbacks.base import CALLBACKS, Callback
from countcast.utils.logging import get_logger

log = get_logger("diagnostics")


@CALLBACKS.register("step_timer")
class StepTimer(Callback):
    def __init__(self, member: int) -> None:
        self.member = member
        self.started = 0.0
        self.last = 0.0
        self.slowest = 0.0

    @classmethod
    def from_config(cls, cfg, member: int) -> StepTimer:
        return cls(member)

    def on_fit_start(self, ctx) -> None:
        self.started = self.last = time.perf_counter()

    def on_step_end(self, ctx) -> None:
        now = time.perf_counter()
        self.slowest = max(self.slowest, now - self.last)
        self.last = now

    def on_fit_end(self, ctx) -> None:
        steps = max(1, ctx.state.step)
        log.info("member %d: %.2f ms/step (slowest %.2f ms)", self.member,
                 1000 * (self.last - self.started) / steps, 1000 * self.slowest)


@CALLBACKS.register("grad_stats")
class GradStats(Callback):
    def __init__(self, member: int) -> None:
        self.member = member
        self.norms: list[float] = []

    @classmethod
    def from_config(cls, cfg, member: int) -> GradStats:
        return cls(member)

    def on_epoch_start(self, ctx) -> None:
        self.norms = []

    def on_step_end(self, ctx) -> None:
        self.norms.append(ctx.state.last.grad_norm)

    def on_epoch_end(self, ctx) -> None:
        finite = [n for n in self.norms if math.isfinite(n)]
        if not finite:
            log.info("member %d epoch %d: no finite gradient norm", self.member, ctx.state.epoch)
            return
        finite.sort()
        log.info("member %d epoch %d: |g| median %.4g, p90 %.4g, max %.4g, non-finite %d", self.member,
                 ctx.state.epoch, finite[len(finite) // 2], finite[int(0.9 * (len(finite) - 1))], finite[-1],
                 len(self.norms) - len(finite))
