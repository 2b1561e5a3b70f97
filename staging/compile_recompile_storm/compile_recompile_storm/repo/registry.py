"""Name -> factory tables, filled by decorators where the components are defined."""

from __future__ import annotations

from typing import Callable


class Registry:
    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, Callable] = {}

    def register(self, name: str) -> Callable[[Callable], Callable]:
        def deco(fn: Callable) -> Callable:
            if name in self._items:
                raise KeyError(f"{self.kind} {name!r} registered twice")
            self._items[name] = fn
            return fn
        return deco

    def get(self, name: str) -> Callable:
        try:
            return self._items[name]
        except KeyError:
            raise KeyError(f"unknown {self.kind} {name!r}; known: {sorted(self._items)}") from None

    def names(self) -> list[str]:
        return sorted(self._items)


MODELS = Registry("model")
CALLBACKS = Registry("callback")
