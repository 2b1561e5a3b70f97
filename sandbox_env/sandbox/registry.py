"""Backends by name: the one table mapping a mode name to the backend that serves it.

Every list of modes (CLI choices, the models' ``Mode``, server health, doctor) is derived
from this table. A backend is added by one ``register(Backend(...))`` call here (built-in)
or at start-up (a plugin), and by nothing else; its class implements ``SandboxBackend``
(base.py) and is imported only when the mode is used.

``auto`` walks the tiers (the backends with a ``tier``, lowest first) and takes the first
that can be created, saying which it chose and why the ones before it could not serve.

Standard library only at import time, so ``models`` can take the mode names from it.
"""

from __future__ import annotations

import importlib
import logging
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import SandboxUnavailable

if TYPE_CHECKING:  # typing only: base needs the models, which take the mode names from here
    from .base import Sandbox, SandboxBackend

log = logging.getLogger(__name__)

AUTO = "auto"


@dataclass(frozen=True)
class Backend:
    """One registered backend.

    ``target`` is ``"module:Class"`` of a ``SandboxBackend``. ``tier`` is its place in
    ``auto``'s walk (None: used only when asked for by name). ``real``: it executes code
    for real (may record traces and certify tasks). ``untrusted``: safe for untrusted agent
    code (isolated, or executing nothing).
    """

    name: str
    target: str
    summary: str
    tier: int | None = None
    real: bool = True
    untrusted: bool = False

    def load(self) -> type[SandboxBackend]:
        """The backend class; raises ImportError when this build lacks it."""
        module, _, attr = self.target.partition(":")
        return getattr(importlib.import_module(module), attr)  # type: ignore[no-any-return]

    def available(self) -> tuple[bool, str]:
        """Whether it can work here now, and why not (never raises)."""
        try:
            return self.load().available()
        except ImportError as exc:
            return False, f"{self.name} mode is not available in this build: {exc}"


_BACKENDS: dict[str, Backend] = {}


def register(backend: Backend) -> Backend:
    """Add ``backend`` under its name; raises ValueError if the name is taken or reserved."""
    if backend.name == AUTO or backend.name in _BACKENDS:
        raise ValueError(f"sandbox mode {backend.name!r} is already registered")
    _BACKENDS[backend.name] = backend
    return backend


def unregister(name: str) -> None:
    """Remove a backend (tests and plugins); unknown names are ignored."""
    _BACKENDS.pop(name, None)


def modes() -> tuple[str, ...]:
    """Names of the registered backends, in registration order (``auto`` not included)."""
    return tuple(_BACKENDS)


def mode_choices(*, real: bool | None = None, untrusted: bool | None = None,
                 auto: bool = True) -> tuple[str, ...]:
    """Mode names for a command-line choice, filtered by the backends' properties."""
    names = tuple(b.name for b in _BACKENDS.values()
                  if (real is None or b.real == real) and (untrusted is None or b.untrusted == untrusted))
    return (*names, AUTO) if auto else names


def backend(name: str) -> Backend:
    """The backend registered as ``name``; raises ValueError naming the choices."""
    try:
        return _BACKENDS[name]
    except KeyError:
        raise ValueError(f"unknown mode {name!r}; choose from {', '.join(mode_choices())}") from None


def find(name: str) -> Backend | None:
    """The backend registered as ``name``, or None (e.g. a test double's mode)."""
    return _BACKENDS.get(name)


def tiers() -> list[Backend]:
    """The backends ``auto`` tries, in order."""
    return sorted((b for b in _BACKENDS.values() if b.tier is not None), key=lambda b: b.tier or 0)


_CHOICES: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def selection(sandbox: Sandbox) -> str:
    """Why ``sandbox`` is the one in use: asked for by name, or auto mode's choice and reasons."""
    try:
        return _CHOICES.get(sandbox, f"{sandbox.mode} (made directly)")
    except TypeError:  # not weak-referenceable
        return f"{sandbox.mode} (made directly)"


def make_sandbox(mode: str, owner: str | None = None,
                 say: Callable[[str], None] | None = None) -> Sandbox:
    """A sandbox of ``mode`` (a registered name or ``auto``).

    Raises ValueError for an unknown mode and SandboxUnavailable (with the reason) when the
    backend asked for by name cannot work here. ``auto`` reports its choice through ``say``
    (default: the log, a warning when it had to fall back) and raises SandboxUnavailable
    only if no tier can work.
    """
    if mode == AUTO:
        return _walk_tiers(owner, say)
    sandbox = _create(backend(mode), owner)
    _remember(sandbox, f"{mode}: asked for by name")
    return sandbox


def _remember(sandbox: Sandbox, why: str) -> None:
    try:
        _CHOICES[sandbox] = why
    except TypeError:
        pass


def _create(b: Backend, owner: str | None) -> Sandbox:
    try:
        cls = b.load()
    except ImportError as exc:
        raise SandboxUnavailable(f"{b.name} mode requested but it is not available in this build: "
                                 f"{exc}") from exc
    try:
        return cls.create(owner=owner)
    except SandboxUnavailable as exc:
        raise SandboxUnavailable(f"{b.name} mode requested but {exc}") from exc


def _walk_tiers(owner: str | None, say: Callable[[str], None] | None) -> Sandbox:
    skipped: list[str] = []
    for b in tiers():
        try:
            sandbox = _create(b, owner)
        except SandboxUnavailable as exc:
            skipped.append(str(exc).replace(f"{b.name} mode requested but ", f"{b.name}: ", 1))
            continue
        why = "; ".join(skipped) if skipped else "the first tier works here"
        (say or (log.warning if skipped else log.info))(f"auto mode: using {b.name} ({why})")
        _remember(sandbox, f"auto mode: using {b.name} ({why})")
        return sandbox
    raise SandboxUnavailable("auto mode: no tier can work here: " + "; ".join(skipped))


# The built-in backends, in the order the CLI lists them.
register(Backend("mock", "sandbox_env.sandbox.mock:MockSandbox", tier=100, real=False, untrusted=True,
                 summary="replays runs recorded for real; no Docker, no torch"))
register(Backend("docker", "sandbox_env.sandbox.docker:DockerSandbox", tier=0, untrusted=True,
                 summary="throwaway locked-down containers (the isolated way to run)"))
register(Backend("process", "sandbox_env.sandbox.process:ProcessSandbox", tier=50, untrusted=True,
                 summary="bubblewrap namespaces with the project's runner venv (no daemon)"))
register(Backend("local", "sandbox_env.sandbox.local:LocalSandbox",
                 summary="host processes with host torch; no isolation: recording and dev only"))
register(Backend("ray", "sandbox_env.sandbox.ray_backend.sandbox:RaySandbox", real=False, untrusted=True,
                 summary="forwards runs to sandbox actors on a Ray cluster's nodes (--ray ADDRESS)"))
