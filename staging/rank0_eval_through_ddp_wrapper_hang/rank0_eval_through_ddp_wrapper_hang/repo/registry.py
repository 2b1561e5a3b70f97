"""Name -> factory tables for models and callbacks (selected by name from the config)."""

from __future__ import annotations

from typing import Any, Callable


class Registry:
    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, Callable[..., Any]] = {}

    def register(self, name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def deco(obj: Callable[..., Any]) -> Callable[..., Any]:
            if name in self._items:
                raise KeyError(f"{self.kind} {name!r} registered twice")
            self._items[name] = obj
            return obj

        return deco

    def get(self, name: str) -> Callable[..., Any]:
        try:
            return self._items[name]
        except KeyError:
            raise KeyError(f"unknown {self.kind} {name!r}; known: {sorted(self._items)}") from None

    def names(self) -> list[str]:
        return sorted(self._items)


MODELS = Registry("model")
CALLBACKS = Registry("callback")
