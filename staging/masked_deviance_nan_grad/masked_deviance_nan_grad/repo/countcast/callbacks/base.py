"""Callback interface (0.9: one method per loop event, see countcast.training.hooks.EVENTS)."""

from __future__ import annotations

from countcast.registry import Registry

CALLBACKS: Registry = Registry("callback")

# What the nightly job runs, in order. The guard comes right after the step is recorded so that a
# diverged member stops before anything else looks at its state.
DEFAULT_CALLBACKS = ("nonfinite_guard", "history", "holdout_monitor", "progress", "early_stop")


class Callback:
    def on_fit_start(self, ctx) -> None:
        pass

    def on_epoch_start(self, ctx) -> None:
        pass

    def on_step_end(self, ctx) -> None:
        pass

    def on_epoch_end(self, ctx) -> None:
        pass

    def on_fit_end(self, ctx) -> None:
        pass


def callback_names(cfg) -> list[str]:
    extra = [n.strip() for n in cfg.job.extra_callbacks.split(",") if n.strip()]
    return [*DEFAULT_CALLBACKS, *(n for n in extra if n not in DEFAULT_CALLBACKS)]


def build_callbacks(cfg, member: int, names=None) -> list[Callback]:
    return [CALLBACKS.get(name).from_config(cfg, member) for name in (names or callback_names(cfg))]
