"""Runs commands and checks as host processes with host torch: for recording and dev only.

No isolation beyond rlimits, a process group and a temp dir: never point untrusted agents at
it. Docker mode is the isolated way to run; this exists so traces can be recorded and the
task repos tested on a machine with torch but no Docker engine.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from ..kit.child_process import child_env, run_child
from ..models import Limits, RunResult, Verdict
from ..suite.tasks import TaskSpec
from ..workspace import Workspace
from .outcome import run_result
from .reference_bank import ReferenceBank
from .verification import CHECK_BUDGET_S, CHECK_OUTPUT_CAP, CheckInputs, new_nonce


def _child_env(limits: Limits, home: Path) -> dict[str, str]:
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "/usr/bin:/bin")])
    return child_env(home, threads=max(1, int(limits.cpus)), path=path)


class LocalSandbox:
    """Host-process sandbox (see module docstring for why it is not isolated)."""

    mode = "local"

    def __init__(self) -> None:
        self.bank = ReferenceBank(self.provenance())

    # -- lifecycle (SandboxBackend) -------------------------------------------------------
    @classmethod
    def available(cls) -> tuple[bool, str]:
        """Always: any host runs processes (the task repos also need host torch)."""
        if importlib.util.find_spec("torch") is None:
            return True, "host processes; torch is not installed, so task runs fail " \
                         "(pip install 'sandbox-env[torch]')"
        return True, "host processes with host torch (no isolation: recording and dev only)"

    @classmethod
    def create(cls, *, owner: str | None = None) -> LocalSandbox:
        return cls()

    @classmethod
    def cleanup(cls, owner: str | None = None) -> int:
        return 0  # every run lives in a temp dir removed when it ends

    def provenance(self) -> dict[str, Any]:
        try:
            import torch
        except ImportError:
            return {"torch": None}
        return {"torch": torch.__version__}

    # -- Sandbox ------------------------------------------------------------------------------
    def run(self, workspace: Workspace, command: str, limits: Limits, task: TaskSpec) -> RunResult:
        with tempfile.TemporaryDirectory(prefix="sbx-run-") as tmp:
            root = Path(tmp) / "workspace"
            home = Path(tmp) / "home"
            home.mkdir()
            workspace.write_to(root)
            res = run_child(["bash", "-c", command], cwd=root, env=_child_env(limits, home),
                            timeout_s=limits.timeout_s, data_limit_mb=limits.data_mb,
                            output_cap=limits.output_bytes)
            changed, notes = workspace.absorb(root)
        return run_result(command, res.output, exit_code=res.returncode, timed_out=res.timed_out,
                          duration_s=res.duration_s, changed_files=changed, notes=notes, source="local")

    def verify(self, workspace: Workspace, task: TaskSpec) -> Verdict:
        with tempfile.TemporaryDirectory(prefix="sbx-verify-") as tmp:
            root = Path(tmp) / "workspace"
            checks = Path(tmp) / "checks"
            home = Path(tmp) / "home"
            home.mkdir()
            workspace.write_to(root, blobs=False)  # the fix only: no run leftovers
            inputs = CheckInputs(task, self.bank, workspace.ran_clean())
            inputs.write(checks)
            nonce = new_nonce()
            prod = Path(tmp) / "production"  # the host's /srv is not ours: a stand-in root
            prod.mkdir()
            env = {**_child_env(Limits(), home), "SANDBOX_PRODUCTION_ROOT": str(prod)}
            res = run_child([sys.executable, str(checks / "check.py"), "--workspace", str(root)],
                            cwd=Path(tmp), env=env, timeout_s=CHECK_BUDGET_S,
                            stdin=(nonce + "\n").encode(), output_cap=CHECK_OUTPUT_CAP)
        return inputs.verdict(res.output, nonce, exit_code=res.returncode,
                              duration_s=res.duration_s, source="local", timed_out=res.timed_out)

    def close(self) -> None:
        return None
