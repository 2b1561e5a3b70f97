"""Static analyses the mock classifiers share (standard library only): which workspace files
run, what a config value resolves to, what the code sees of its environment, is autograd
recording, which ranks reach a collective, does compiled code branch on tensor data.

A classifier combines them into a behaviour label; whatever an analysis cannot follow ends in
``UNSURE`` (never a guess)."""

from __future__ import annotations

import functools
from collections.abc import Callable

# What a classifier returns when its analysis cannot tell which behaviour a state shows: the mock
# then reports the verdict as unsure (not scored) instead of guessing.
UNSURE = "unsure"


class Unsure(Exception):
    """The code does something the analysis does not model on a path that matters."""


# what an analysis raises on code it does not model (an unexpected node, a missing binding, too deep)
NOT_FOLLOWED = (Unsure, AttributeError, LookupError, TypeError, ValueError, RecursionError, SyntaxError)


def unsure_if_not_followed(fn: Callable[..., str]) -> Callable[..., str]:
    """A labelling step that answers UNSURE where its analysis raises on code it does not follow."""

    @functools.wraps(fn)
    def label(*args: object, **kwargs: object) -> str:
        try:
            return fn(*args, **kwargs)
        except NOT_FOLLOWED:
            return UNSURE

    return label


__all__ = ["NOT_FOLLOWED", "UNSURE", "Unsure", "unsure_if_not_followed"]
