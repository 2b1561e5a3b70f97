"""cgroup v2 memory and pids limits for process mode, where this machine delegates them.

``probe()`` says whether a unified (v2) hierarchy exists and whether this process may create
child cgroups with the memory and pids controllers; ``RunGroup`` is one run's cgroup (its
limits, its OOM-kill count, its removal). On a cgroup v1 host, or when nothing is
delegated, process mode bounds memory and processes with rlimits alone and says so.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")


def _own_cgroup(root: Path) -> Path:
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        if line.startswith("0::"):
            return root / line[3:].lstrip("/")
    raise OSError("no unified-hierarchy entry in /proc/self/cgroup")


def probe(root: Path = CGROUP_ROOT) -> tuple[Path | None, str]:
    """(the cgroup to create run cgroups in, or None; what was found). Never raises."""
    if not (root / "cgroup.controllers").exists():
        return None, (f"cgroup v1 (no unified hierarchy at {root}): memory and processes are bounded "
                      "by rlimits only (RLIMIT_DATA, RLIMIT_NPROC)")
    try:
        base = _own_cgroup(root)
        enabled = (base / "cgroup.subtree_control").read_text().split()
        if not {"memory", "pids"} <= set(enabled):
            (base / "cgroup.subtree_control").write_text("+memory +pids")
        test = base / f"sandbox-env-probe-{os.getpid()}"
        test.mkdir()
        test.rmdir()
    except OSError as exc:
        return None, (f"cgroup v2, but memory/pids are not delegated to this process ({exc}): "
                      "rlimits only")
    return base, f"cgroup v2 delegated at {base}: memory.max and pids.max per run"


class RunGroup:
    """One run's cgroup under ``base``: memory.max (no swap) and pids.max."""

    def __init__(self, base: Path, memory_mb: int, pids: int) -> None:
        self.path = base / f"sandbox-env-{uuid.uuid4().hex[:12]}"
        self.path.mkdir()
        (self.path / "memory.max").write_text(str(memory_mb * 1024 * 1024))
        swap = self.path / "memory.swap.max"
        if swap.exists():
            swap.write_text("0")
        (self.path / "pids.max").write_text(str(pids))

    @property
    def procs(self) -> Path:
        return self.path / "cgroup.procs"

    def oom_kills(self) -> int:
        try:
            for line in (self.path / "memory.events").read_text().splitlines():
                if line.startswith("oom_kill "):
                    return int(line.split()[1])
        except (OSError, ValueError):
            pass
        return 0

    def remove(self) -> None:
        """Kill what is left in it and remove it (never raises)."""
        try:
            kill = self.path / "cgroup.kill"
            if kill.exists():
                kill.write_text("1")
            self.path.rmdir()
        except OSError:
            pass
