"""Sandboxes: where commands run, chosen by mode name (docker, local, mock, ...; see registry).

Importing the package loads only the registry (standard library), so the domain models can
take the mode names from it without a cycle; every other public name is loaded on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ..errors import SandboxUnavailable
from .registry import AUTO, Backend, backend, find, make_sandbox, mode_choices, modes, register, tiers

if TYPE_CHECKING:
    from .base import Sandbox, SandboxBackend
    from .docker import docker_available
    from .mock import MockSandbox

_LAZY = {
    "Sandbox": ".base",
    "SandboxBackend": ".base",
    "MockSandbox": ".mock",
    "docker_available": ".docker",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_LAZY[name], __name__), name)


__all__ = ["AUTO", "Backend", "MockSandbox", "Sandbox", "SandboxBackend", "SandboxUnavailable",
           "backend", "docker_available", "find", "make_sandbox", "mode_choices", "modes", "register",
           "tiers"]
