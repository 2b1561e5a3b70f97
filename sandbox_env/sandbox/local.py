"""Runs commands and checks as host processes with host torch: for recording and dev only.

No isolation beyond rlimits, a process group and a temp dir: never point untrusted agents at
it. Docker mode is the isolated way to run; this exists so traces can be recorded and the
task repos tested on a machine with torch but no Docker engine.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from ..checkkit import __file__ as CHECKKIT_PATH
from ..checkkit import run_child
from ..models import Limits, RunResult, Verdict
from ..tasks import TaskSpec
from ..workspace import Workspace
from .base import classify_run, new_nonce, verdict_from_check

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


class LocalSandbox:
    """Host-process sandbox (see module docstring for why it is not isolated)."""

    mode = "local"

    def run(self, workspace: Workspace, command: str, limits: Limits, task: TaskSpec) -> RunResult:
        with tempfile.TemporaryDirectory(prefix="sbx-run-") as tmp:
            root = Path(tmp) / "workspace"
            home = Path(tmp) / "home"
            home.mkdir()
            workspace.write_to(root)
            res = run_child(["bash", "-c", command], cwd=root, env=_child_env(limits, home),
                            timeout_s=limits.timeout_s, data_limit_mb=limits.data_mb,
                            output_cap=limits.output_bytes)
            text = res.output
            changed, notes = workspace.absorb(root)
        if notes:
            text += "\n" + "\n".join(f"[sandbox] {n}" for n in notes)
        return RunResult(
            command=command, output=text, exit_code=res.returncode,
            outcome=classify_run(res.returncode, res.timed_out, False, text),
            duration_s=res.duration_s, changed_files=changed, source="local",
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
            res = run_child([sys.executable, str(checks / "check.py"), "--workspace", str(root)],
                            cwd=Path(tmp), env=_child_env(Limits(), home), timeout_s=CHECK_BUDGET_S,
                            stdin=(nonce + "\n").encode(), output_cap=4_000_000)
        return verdict_from_check(res.output, nonce, exit_code=res.returncode,
                                  duration_s=res.duration_s, source="local", timed_out=res.timed_out)

    def close(self) -> None:
        return None
