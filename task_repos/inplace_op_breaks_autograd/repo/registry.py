"""A small name -> factory registry, shared by the model zoo and the activation table."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class Registry:
    """Maps names to factories; ``build(name, ...)`` calls the factory registered as ``name``."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._factories: dict[str, Callable[..., Any]] = {}

    def register(self, name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def add(factory: Callable[..., Any]) -> Callable[..., Any]:
            if name in self._factories:
                raise KeyError(f"{self.kind} {name!r} is registered twice")
            self._factories[name] = factory
            return factory

        return add

    def names(self) -> list[str]:
        return sorted(self._factories)

    def build(self, name: str, *args: Any, **kwargs: Any) -> Any:
        try:
            factory = self._factories[name]
        except KeyError:
            raise KeyError(f"unknown {self.kind} {name!r}; known: {', '.join(self.names())}") from None
        return factory(*args, **kwargs)


MODELS = Registry("model")
