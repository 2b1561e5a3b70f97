"""The Sandbox protocol: what every backend (docker, local, mock, ...) offers, and what it raises.

A backend is two things: a class implementing ``SandboxBackend`` (how it is probed, created
and cleaned up) and the ``Sandbox`` instances it creates (where one environment runs and
verifies). The environment, the server, the eval runner and the CLI know only these two
protocols; they find backends by mode name in ``registry``.

A sandbox may also offer ``answers_at_once(workspace, task, command=None) -> bool``: True when
that run (verify, without a command) is answered from memory, so a server may call it on its
event loop (MockSandbox does, for recorded and classified states); without it every run and
verification goes to a worker thread.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Protocol, runtime_checkable

from ..errors import SandboxUnavailable
from ..models import Limits, RunResult, Verdict
from ..suite.tasks import TaskSpec
from ..workspace import Workspace

__all__ = ["GLOO_ENV", "Sandbox", "SandboxBackend", "SandboxUnavailable", "normalise_command"]

# How gloo finds its address in every isolated sandbox (docker under runc or runsc, process
# mode), for agent runs and verifications alike: no interface named. torch treats an empty
# GLOO_SOCKET_IFNAME as unset (and a repo's ``os.environ.setdefault(..., "lo")`` leaves it
# alone), so every rank binds the first usable address the sandbox's hostname, localhost,
# resolves to in its /etc/hosts: the same on every rank. Naming ``lo`` let the ranks of one job
# under gVisor, whose loopback lists ::1 and 127.0.0.1 in varying order, pick different families
# (docs/runsc.md).
GLOO_ENV = {"GLOO_SOCKET_IFNAME": ""}


@runtime_checkable
class Sandbox(Protocol):
    """Where commands run and fixes are verified, for any number of episodes at once.

    Methods are thread-safe: episodes of one server share one sandbox. An outcome of the
    agent's code (failure, timeout, OOM, output flood, a forged verdict) is a result, never
    an exception; a broken piece of the sandbox that is specific to one call (a container
    that could not start, a check that printed no verdict) is a result with
    ``outcome == infra_error``. Only a sandbox that cannot run anything at all raises.
    """

    mode: str
    """The registry name of the backend that made this sandbox ("docker", "mock", ...)."""

    def run(self, workspace: Workspace, command: str, limits: Limits, task: TaskSpec) -> RunResult:
        """Run ``command`` in a copy of ``workspace`` under ``limits``; apply changed files back.

        Returns the classified RunResult (output capped, head and tail kept).
        Raises SandboxUnavailable when nothing can run (e.g. the Docker engine is gone); the
        workspace is then unchanged.
        """
        ...

    def verify(self, workspace: Workspace, task: TaskSpec) -> Verdict:
        """Judge ``workspace`` with the task's hidden checks, in a fresh environment.

        The workspace is not changed. Returns the Verdict (``infra_error`` when the check
        itself broke). Raises SandboxUnavailable when nothing can run.
        """
        ...

    def provenance(self) -> dict[str, Any]:
        """Where this sandbox's runs happen, for records: keys ``image`` and ``torch`` when known.

        Never raises; unknown values are omitted or None.
        """
        ...

    def close(self) -> None:
        """Release every resource (containers, volumes, threads). Idempotent; never raises."""
        ...


class SandboxBackend(Protocol):
    """A backend's lifecycle, as class methods: probe, create, clean up after crashes."""

    @classmethod
    def available(cls) -> tuple[bool, str]:
        """Whether this backend can work on this machine now, and why not. Never raises."""
        ...

    @classmethod
    def create(cls, *, owner: str | None = None) -> Sandbox:
        """A ready sandbox; ``owner`` labels what it leaves behind (for ``cleanup``).

        Raises SandboxUnavailable with the reason (and the fix) when it cannot work here.
        """
        ...

    @classmethod
    def cleanup(cls, owner: str | None = None) -> int:
        """Remove what crashed sandboxes left (of ``owner``, or all); returns how many.

        Raises SandboxUnavailable when the backend cannot be reached to clean up.
        """
        ...


@lru_cache(maxsize=1024)  # pure, and asked several times per run
def normalise_command(command: str) -> str:
    """`cd . && python3  train.py` -> `python train.py`; used to match recorded commands."""
    cmd = " ".join(command.strip().split())
    cmd = re.sub(r"^(cd\s+(\.|/workspace|~/workspace)\s*(&&|;)\s*)+", "", cmd)
    cmd = re.sub(r"^(timeout\s+\d+[smh]?\s+)", "", cmd)
    cmd = re.sub(r"\bpython3(\.\d+)?\b", "python", cmd)
    cmd = re.sub(r"^python -u\b", "python", cmd)
    return cmd.removesuffix(" 2>&1")
