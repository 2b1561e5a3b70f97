"""The Docker engine and its failures, handled in one place.

Connecting (engine and runner image), probing whether the engine answers, and telling an
unreachable engine (the sandbox cannot run anything: ``SandboxUnavailable``) from one broken
container (that call's result is an infrastructure error: ``ContainerError``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..base import SandboxUnavailable


class ContainerError(Exception):
    """One container operation failed while the engine is up; the message says what."""


def engine_status() -> tuple[bool, str]:
    """Whether a Docker engine answers, and why not when it does not (never raises)."""
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


def connect(image: str, client: Any = None) -> tuple[Any, Any]:
    """(client, image object); raises SandboxUnavailable when the engine or image is missing."""
    import docker  # optional dependency: only this package talks to Docker

    try:
        client = client or docker.from_env(timeout=30)
        client.ping()
        return client, client.images.get(image)
    except docker.errors.ImageNotFound as exc:
        raise SandboxUnavailable(f"sandbox image {image} not found: build it with "
                                 "`sandbox-env images build`") from exc
    except Exception as exc:
        raise SandboxUnavailable(f"Docker engine not reachable: {exc}") from exc


class Engine:
    """A connected engine: turns exceptions of container operations into the two cases."""

    def __init__(self, client: Any) -> None:
        import docker

        self.client = client
        self.errors = docker.errors

    def down(self, exc: BaseException) -> SandboxUnavailable | None:
        """SandboxUnavailable when ``exc`` came from an unreachable engine (not a bad container)."""
        try:
            self.client.ping()
            return None
        except Exception as ping_exc:
            return SandboxUnavailable(f"Docker engine not reachable ({ping_exc}); original error: {exc}")

    @contextmanager
    def failures(self, what: str, kinds: type[BaseException] | tuple[type[BaseException], ...] = Exception
                 ) -> Iterator[None]:
        """Raise SandboxUnavailable if the engine is gone, else ContainerError("what: exc")."""
        try:
            yield
        except (SandboxUnavailable, ContainerError):
            raise
        except kinds as exc:
            if down := self.down(exc):
                raise down from exc
            raise ContainerError(f"{what}: {exc}") from exc
