"""A small name -> factory registry (models, optimisers) so configs can name components."""

from __future__ import annotations

from typing import Callable, Generic, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, Callable[..., T]] = {}

    def register(self, name: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
        def deco(fn: Callable[..., T]) -> Callable[..., T]:
            if name in self._items:
                raise KeyError(f"{self.kind} {name!r} registered twice")
            self._items[name] = fn
            return fn

        return deco

    def build(self, name: str, *args, **kwargs) -> T:
        try:
            fn = self._items[name]
        except KeyError:
            raise KeyError(f"unknown {self.kind} {name!r}; known: {sorted(self._items)}") from None
        return fn(*args, **kwargs)


MODELS: Registry = Registry("model")
OPTIMIZERS: Registry = Registry("optimizer")
