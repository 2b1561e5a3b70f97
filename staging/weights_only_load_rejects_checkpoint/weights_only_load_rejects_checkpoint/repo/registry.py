"""Name -> factory registries, so configs and checkpoints refer to components by name."""

from __future__ import annotations

from typing import Any, Callable


class Registry:
    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, Callable[..., Any]] = {}

    def register(self, name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
            if name in self._items:
                raise KeyError(f"{self.kind} {name!r} registered twice")
            self._items[name] = fn
            return fn
        return deco

    def build(self, name: str, *args: Any, **kwargs: Any) -> Any:
        if name not in self._items:
            raise KeyError(f"unknown {self.kind} {name!r}; known: {sorted(self._items)}")
        return self._items[name](*args, **kwargs)

    def names(self) -> list[str]:
        return sorted(self._items)


MODELS = Registry("model")
SCHEDULES = Registry("schedule")
