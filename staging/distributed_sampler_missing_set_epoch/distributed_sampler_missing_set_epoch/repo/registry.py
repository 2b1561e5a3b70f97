"""Name -> factory tables for models and callbacks (selected by name from the config)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class Registry:
    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._table: dict[str, Callable[..., Any]] = {}

    def register(self, name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def deco(obj: Callable[..., Any]) -> Callable[..., Any]:
            if name in self._table:
                raise KeyError(f"{self.kind} {name!r} registered twice")
            self._table[name] = obj
            return obj

        return deco

    def get(self, name: str) -> Callable[..., Any]:
        try:
            return self._table[name]
        except KeyError:
            raise KeyError(f"unknown {self.kind} {name!r}; known: {sorted(self._table)}") from None

    def names(self) -> list[str]:
        return sorted(self._table)


MODELS = Registry("model")
CALLBACKS = Registry("callback")
