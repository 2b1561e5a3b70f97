"""A small named-component registry.

Components (models, losses, activations, callbacks, schedules, augmentations) register themselves
under a string name at import time; configs refer to them by that name::

    LOSSES = Registry("loss")

    @LOSSES.register("poisson")
    class PoissonDeviance(Loss): ...

    loss = LOSSES.build("poisson", reduction="mean")
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class RegistryError(KeyError):
    pass


class Registry(Generic[T]):
    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}
        self._aliases: dict[str, str] = {}

    def register(self, name: str, *aliases: str) -> Callable[[T], T]:
        def deco(obj: T) -> T:
            self.add(name, obj, *aliases)
            return obj
        return deco

    def add(self, name: str, obj: T, *aliases: str) -> None:
        key = self._norm(name)
        if key in self._items and self._items[key] is not obj:
            raise RegistryError(f"{self.kind} {name!r} is registered twice")
        self._items[key] = obj
        for a in aliases:
            self._aliases[self._norm(a)] = key

    def get(self, name: str) -> T:
        key = self._norm(name)
        key = self._aliases.get(key, key)
        if key not in self._items:
            close = difflib.get_close_matches(key, list(self._items), n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            raise RegistryError(f"unknown {self.kind} {name!r}{hint}; known: {', '.join(sorted(self._items))}")
        return self._items[key]

    def build(self, name: str, *args: Any, **kwargs: Any) -> Any:
        factory = self.get(name)
        return factory(*args, **kwargs)  # type: ignore[operator]

    def names(self) -> list[str]:
        return sorted(self._items)

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        key = self._norm(name)
        return key in self._items or key in self._aliases

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._items)

    @staticmethod
    def _norm(name: str) -> str:
        return name.strip().lower().replace("-", "_")

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {self.names()})"
