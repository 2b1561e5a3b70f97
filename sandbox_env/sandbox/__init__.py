"""Sandboxes: where commands run (docker, local host processes, or mock replay)."""

from __future__ import annotations

import logging

from .base import Sandbox, SandboxUnavailable
from .mock import MockSandbox

MODES = ("mock", "docker", "local", "auto")
log = logging.getLogger(__name__)


def docker_available() -> tuple[bool, str]:
    """Whether a Docker engine answers, and why not when it does not."""
    try:
        import docker
    except ImportError:
        return False, "the docker Python package is not installed"
    try:
        client = docker.from_env(timeout=3)
        client.ping()
        client.close()
    except Exception as exc:  # any failure to reach the engine
        return False, f"Docker engine not reachable: {exc.__class__.__name__}: {exc}"
    return True, "ok"


def make_sandbox(mode: str, owner: str | None = None) -> Sandbox:
    """Build the sandbox for ``mode``; raises SandboxUnavailable with the reason."""
    if mode == "mock":
        return MockSandbox()
    if mode == "local":
        from .local import LocalSandbox

        return LocalSandbox()
    if mode in ("docker", "auto"):
        ok, why = docker_available()
        if ok:
            try:
                from .docker import DockerSandbox
            except ImportError as exc:
                why = f"docker mode is not available in this build: {exc}"
            else:
                try:
                    return DockerSandbox(owner=owner)
                except SandboxUnavailable as exc:  # e.g. the image is not built
                    why = str(exc)
        if mode == "auto":
            log.warning("auto mode: using mock (%s)", why)
            return MockSandbox()
        raise SandboxUnavailable(f"docker mode requested but {why}")
    raise ValueError(f"unknown mode {mode!r}; choose from {', '.join(MODES)}")


__all__ = ["MODES", "MockSandbox", "Sandbox", "SandboxUnavailable", "docker_available", "make_sandbox"]
