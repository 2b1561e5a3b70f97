"""Name -> builder registry for the models a config can ask for."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

MODELS: dict[str, Callable[..., Any]] = {}


def register_model(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        if name in MODELS:
            raise KeyError(f"model {name!r} registered twice")
        MODELS[name] = fn
        return fn

    return deco


def build(name: str, **kwargs: Any) -> Any:
    try:
        builder = MODELS[name]
    except KeyError:
        raise KeyError(f"unknown model {name!r}; known: {sorted(MODELS)}") from None
    return builder(**kwargs)
