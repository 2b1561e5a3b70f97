"""A small name -> builder registry, so configs can pick an architecture by name."""

from __future__ import annotations

from typing import Callable

_MODELS: dict[str, Callable] = {}


def register_model(name: str) -> Callable[[Callable], Callable]:
    def wrap(builder: Callable) -> Callable:
        if name in _MODELS:
            raise KeyError(f"model {name!r} registered twice")
        _MODELS[name] = builder
        return builder
    return wrap


def get_model_builder(name: str) -> Callable:
    try:
        return _MODELS[name]
    except KeyError:
        raise KeyError(f"unknown model {name!r}; known: {sorted(_MODELS)}") from None
