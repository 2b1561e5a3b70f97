"""What a sandbox container is: its locked-down spec, creating one, narrowing its limits, removing it.

Each container has a read-only root, no network, a memory (= memory + swap) cap, a CPU
quota with OMP threads matched, a pids limit, all capabilities dropped, no-new-privileges,
tini as PID 1, a non-root user, and a sized tmpfs-backed volume as /workspace (a volume, so
the archive API can copy files in and out of a read-only container), a writable tmpfs /srv and
a root-only /checks in every box (verification boxes hold the hidden checks there), run by the OCI runtime
the sandbox was started with (runc or gVisor's runsc: runtime.py). Every container and
volume carries the labels ``sandbox-env.owner`` / ``sandbox-env.role`` so ``reap`` can
remove what a crashed server left.
"""

from __future__ import annotations

import logging
import os
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

from ...models import Limits
from ..base import GLOO_ENV
from .runtime import traits

log = logging.getLogger(__name__)

RUNNER_IMAGE = os.environ.get("SANDBOX_ENV_RUNNER_IMAGE", "sandbox-env-runner:torch2.13.0")
LABEL_OWNER = "sandbox-env.owner"
LABEL_ROLE = "sandbox-env.role"
SANDBOX_UID = 1000
WORKSPACE_DIR = "/workspace"
CHECKS_DIR = "/checks"
# The check (trusted) runs as root with just enough to manage its uid-1000 children; the
# children lose every capability when they switch uid.
VERIFIER_CAPS = ["SETUID", "SETGID", "CHOWN", "DAC_OVERRIDE", "FOWNER", "KILL"]
# Generous caps for the idle containers; each run narrows memory and CPU with ``narrow``.
WORKSPACE_TMPFS = "size=512m"
TMP_TMPFS = "size=1g"
# /srv: where tasks' production directories live; writable in every box, so a verification
# that runs the workspace from there has the mount layout of an agent's own run.
SRV_DIR = "/srv"
SRV_TMPFS = f"size=512m,uid={1000},gid={1000},mode=0755,exec"
CHECKS_TMPFS = "size=256m,uid=0,gid=0,mode=0700"  # run boxes get an empty one: same layout
PIDS_LIMIT = Limits.model_fields["pids"].default  # boxes are made before a task's limits are known


@dataclass
class Box:
    """A started container and its volumes; ``role`` is "run" or "verify"."""

    container: Any
    volumes: list[Any]
    role: str
    runtime: str = "runc"
    limits: tuple[int, float] | None = None  # (memory_mb, cpus) in force, None: the generous idle caps


def limit_key(limits: Limits) -> tuple[int, float]:
    """What ``narrow`` sets: memory (= memory + swap) and the CPU quota."""
    return limits.memory_mb, limits.cpus


def _limit_args(limits: Limits | None) -> dict[str, Any]:
    if limits is None:
        return {"mem_limit": "4g", "memswap_limit": "4g"}
    mem = f"{limits.memory_mb}m"
    return {"mem_limit": mem, "memswap_limit": mem, "cpu_period": 100_000,
            "cpu_quota": int(limits.cpus * 100_000)}


def labels(owner: str, role: str) -> dict[str, str]:
    return {LABEL_OWNER: owner, LABEL_ROLE: role}


def _volumes(client: Any, owner: str, role: str) -> list[tuple[str, Any]]:
    """The tmpfs-backed volumes of a box: /workspace, and root-only /checks for verification."""
    mounts = {WORKSPACE_DIR: f"{WORKSPACE_TMPFS},uid={SANDBOX_UID},gid={SANDBOX_UID}"}
    if role == "verify":  # hidden checks: root-only, outside the workspace
        mounts[CHECKS_DIR] = CHECKS_TMPFS
    made: list[tuple[str, Any]] = []
    try:
        for target, opts in mounts.items():
            made.append((target, client.volumes.create(
                driver="local", labels=labels(owner, role),
                driver_opts={"type": "tmpfs", "device": "tmpfs", "o": opts})))
    except Exception:
        for _, v in made:
            v.remove(force=True)
        raise
    return made


def _pids_args(runtime: str) -> dict[str, Any]:
    """The process cap: the pids cgroup (runc), or RLIMIT_NPROC in the sandbox kernel with a
    host backstop (runsc: see ``RuntimeTraits``)."""
    t = traits(runtime)
    if t.nproc_limit is None:
        return {"pids_limit": PIDS_LIMIT}
    from docker.types import Ulimit

    return {"pids_limit": t.host_pids_limit,
            "ulimits": [Ulimit(name="nproc", soft=t.nproc_limit, hard=t.nproc_limit)]}


def create_box(client: Any, image: str, owner: str, role: str, *, runtime: str = "runc",
               limits: Limits | None = None) -> Box:
    """Create and start an idle container (`sleep infinity` under tini) with its volumes.

    ``limits``: memory and CPU set at creation (a runtime that cannot ``narrow`` needs
    them now); None gives the generous idle caps, narrowed per run.
    """
    verify = role == "verify"
    vols = _volumes(client, owner, role)
    ct = None
    try:
        ct = client.containers.create(
            image, command=["sleep", "infinity"], init=True,
            user="0" if verify else str(SANDBOX_UID), working_dir=WORKSPACE_DIR,
            read_only=True, network_mode="none", hostname="localhost",
            tmpfs={"/tmp": f"{TMP_TMPFS},uid={SANDBOX_UID},gid={SANDBOX_UID},exec", SRV_DIR: SRV_TMPFS,
                   **({} if verify else {CHECKS_DIR: CHECKS_TMPFS})},
            volumes={v.name: {"bind": target, "mode": "rw"} for target, v in vols},
            **_limit_args(limits), **_pids_args(runtime), runtime=runtime,
            cap_drop=["ALL"], cap_add=VERIFIER_CAPS if verify else [],
            security_opt=["no-new-privileges"], shm_size="1g",
            labels=labels(owner, role), environment={"HOME": "/tmp"},
        )
        ct.start()
    except Exception:  # a container that was made but did not start goes first: it holds the volumes
        if ct is not None:
            with suppress(Exception):
                ct.remove(force=True)
        for _, v in vols:
            with suppress(Exception):
                v.remove(force=True)
        raise
    return Box(ct, [v for _, v in vols], role, runtime, None if limits is None else limit_key(limits))


def narrow(box: Box, limits: Limits) -> None:
    """Set the box's memory (= memory + swap) and CPU quota to ``limits`` (no-op if already so).

    Raises ValueError when they differ and the box's runtime cannot update a running
    container (runsc): such boxes must be created with their limits (``create_box``).
    """
    if box.limits == limit_key(limits):
        return
    if not traits(box.runtime).can_update:
        raise ValueError(f"a {box.runtime} container cannot change its limits: create it with them")
    mem = f"{limits.memory_mb}m"
    box.container.update(mem_limit=mem, memswap_limit=mem,
                         cpu_period=100_000, cpu_quota=int(limits.cpus * 100_000))
    box.limits = limit_key(limits)


def run_env(limits: Limits) -> dict[str, str]:
    """Environment of a command: threads matched to the CPU quota, gloo as in every sandbox."""
    threads = str(max(1, int(limits.cpus)))
    return {"OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads, "HOME": "/tmp",
            "TMPDIR": "/tmp", "PYTHONUNBUFFERED": "1", **GLOO_ENV}


def labelled(client: Any, label: str | list[str]) -> list[Any]:
    """Containers (running or not) carrying ``label`` (``key`` or ``key=value``; a list: all of
    them). One that is
    removed between the engine's listing and its inspection (a reaper, a box's own close) is
    left out rather than failing the whole listing."""
    return client.containers.list(all=True, filters={"label": label}, ignore_removed=True)


def reap(client: Any, owner: str | None = None) -> int:
    """Remove sandbox-env containers and volumes (of one owner, or all); returns how many."""
    label = f"{LABEL_OWNER}={owner}" if owner else LABEL_OWNER
    n = 0
    for ct in client.containers.list(all=True, filters={"label": label}):
        try:
            ct.remove(force=True)
            n += 1
        except Exception as exc:
            log.warning("reap: %s: %s", ct.short_id, exc)
    for vol in client.volumes.list(filters={"label": label}):
        try:
            vol.remove(force=True)
        except Exception as exc:
            log.warning("reap: volume %s: %s", vol.name, exc)
    return n
