"""Dispatching loop events to callbacks, in registration order."""

from __future__ import annotations

from collections.abc import Iterable

from countcast.callbacks.base import Callback

EVENTS = ("on_fit_start", "on_epoch_start", "on_step_end", "on_epoch_end", "on_fit_end")


class CallbackList:
    def __init__(self, callbacks: Iterable[Callback]) -> None:
        self.callbacks = list(callbacks)

    def fire(self, event: str, ctx) -> None:
        if event not in EVENTS:
            raise ValueError(f"unknown loop event {event!r}")
        for cb in self.callbacks:
            getattr(cb, event)(ctx)

    def __iter__(self):
        return iter(self.callbacks)
