"""Static analyses the mock classifiers share (standard library only): which workspace files
run, what a config value resolves to, what the code sees of its environment, is autograd
recording, which ranks reach a collective, does compiled code branch on tensor data.

A classifier combines them into a behaviour label; whatever an analysis cannot follow ends in
``UNSURE`` (never a guess)."""

from __future__ import annotations

# What a classifier returns when its analysis cannot tell which behaviour a state shows: the mock
# then reports the verdict as unsure (not scored) instead of guessing.
UNSURE = "unsure"


class Unsure(Exception):
    """The code does something the analysis does not model on a path that matters."""


__all__ = ["UNSURE", "Unsure"]
