"""A small name -> factory registry, shared by models, losses, schedules and callbacks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class Registry:
    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, Callable[..., Any]] = {}

    def register(self, name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
            if name in self._items:
                raise ValueError(f"{self.kind} {name!r} registered twice")
            self._items[name] = fn
            return fn
        return wrap

    def build(self, name: str, *args: Any, **kwargs: Any) -> Any:
        try:
            factory = self._items[name]
        except KeyError:
            raise ValueError(f"unknown {self.kind} {name!r}; known: {', '.join(sorted(self._items))}") from None
        return factory(*args, **kwargs)

    def names(self) -> list[str]:
        return sorted(self._items)
