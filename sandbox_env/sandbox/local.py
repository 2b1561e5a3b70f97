"""Runs commands and checks as host processes with host torch: for recording and dev only.

No isolation beyond rlimits, a process group and a temp dir: never point untrusted agents at
it. Docker mode is the isolated way to run; this exists so traces can be recorded and the
task repos tested on a machine with torch but no Docker engine.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..checkkit import __file__ as CHECKKIT_PATH
from ..checkkit import with_data_limit
from ..models import Limits, RunResult, Verdict
from ..tasks import TaskSpec
from ..workspace import Workspace
from .base import cap_output, classify_run, new_nonce, verdict_from_check

CHECK_BUDGET_S = 600.0


def _child_env(limits: Limits, home: Path) -> dict[str, str]:
    threads = str(max(1, int(limits.cpus)))
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "/usr/bin:/bin")])
    return {
        "PATH": path,
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "OMP_NUM_THREADS": threads,
        "MKL_NUM_THREADS": threads,
        "GLOO_SOCKET_IFNAME": "lo",
        "TMPDIR": str(home),
    }


def run_process(argv: list[str], cwd: Path, env: dict[str, str], limits: Limits,
                stdin: str | None = None) -> tuple[int | None, bytes, bool, float]:
    """Run argv in its own session under the limits; returns (exit, output, timed_out, secs)."""

    start = time.monotonic()
    proc = subprocess.Popen(
        with_data_limit(argv, limits.data_mb), cwd=cwd, env=env, start_new_session=True,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    timed_out = False
    try:
        out, _ = proc.communicate(stdin.encode() if stdin is not None else None,
                                  timeout=limits.timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    return (None if timed_out else proc.returncode), out, timed_out, time.monotonic() - start


class LocalSandbox:
    """Host-process sandbox (see module docstring for why it is not isolated)."""

    mode = "local"

    def run(self, workspace: Workspace, command: str, limits: Limits, task: TaskSpec) -> RunResult:
        with tempfile.TemporaryDirectory(prefix="sbx-run-") as tmp:
            root = Path(tmp) / "workspace"
            home = Path(tmp) / "home"
            home.mkdir()
            workspace.write_to(root)
            code, out, timed_out, secs = run_process(
                ["bash", "-c", command], root, _child_env(limits, home), limits)
            text = cap_output(out, limits.output_bytes)
            changed, notes = workspace.absorb(root)
        if notes:
            text += "\n" + "\n".join(f"[sandbox] {n}" for n in notes)
        return RunResult(
            command=command, output=text, exit_code=code,
            outcome=classify_run(code, timed_out, False, text),
            duration_s=round(secs, 3), changed_files=changed, source="local",
        )

    def verify(self, workspace: Workspace, task: TaskSpec) -> Verdict:
        with tempfile.TemporaryDirectory(prefix="sbx-verify-") as tmp:
            root = Path(tmp) / "workspace"
            checks = Path(tmp) / "checks"
            home = Path(tmp) / "home"
            home.mkdir()
            workspace.write_to(root)
            shutil.copytree(task.checks_dir, checks)
            shutil.copy(CHECKKIT_PATH, checks / "checkkit.py")
            nonce = new_nonce()
            limits = Limits(timeout_s=CHECK_BUDGET_S, output_bytes=4_000_000)
            code, out, timed_out, secs = run_process(
                [sys.executable, str(checks / "check.py"), "--workspace", str(root)],
                Path(tmp), _child_env(limits, home), limits, stdin=nonce + "\n")
        return verdict_from_check(out.decode(errors="replace"), nonce, exit_code=code,
                                  duration_s=round(secs, 3), source="local", timed_out=timed_out)

    def close(self) -> None:
        return None
