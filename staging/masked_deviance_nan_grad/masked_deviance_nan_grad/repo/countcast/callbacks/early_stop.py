"""Early stopping on the monitored holdout deviance (``patience`` evaluations without improvement).
Off in the nightly preset (patience 0): the members train for a fixed number of epochs."""

from __future__ import annotations

import math

from countcast.callbacks.base import CALLBACKS, Callback


@CALLBACKS.register("early_stop")
class EarlyStopping(Callback):
    def __init__(self, patience: int = 0, min_delta: float = 1e-4) -> None:
        self.patience = patience
        self.min_delta = min_delta
        self.best = math.inf
        self.bad = 0
        self.seen = 0

    @classmethod
    def from_config(cls, cfg, member: int) -> EarlyStopping:
        return cls(patience=cfg.train.patience)

    def on_step_end(self, ctx) -> None:
        if self.patience <= 0:
            return
        values = ctx.state.metrics.get("holdout_deviance", [])
        if len(values) == self.seen:
            return
        self.seen = len(values)
        if values[-1] < self.best - self.min_delta:
            self.best, self.bad = values[-1], 0
        else:
            self.bad += 1
            if self.bad >= self.patience:
                ctx.state.stop = True
