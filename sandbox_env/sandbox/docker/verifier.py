"""Verification in a fresh box: the workspace in /workspace, the hidden checks in root-only /checks.

The check runs as root and runs agent code as uid 1000, which cannot read the checks or the
reference fix; the nonce reaches the check through a root-only file on its stdin. Agent code
gets the environment of the agent's own runs (``verify_env``).
"""

from __future__ import annotations

import time
from typing import Any

from ...models import Limits, Verdict
from ...suite.tasks import TaskSpec
from ...workspace import Workspace
from ..reference_bank import ReferenceBank
from ..verification import CHECK_BUDGET_S, CHECK_OUTPUT_CAP, CheckInputs, check_env, new_nonce
from .archive import put_files
from .containers import CHECKS_DIR, SANDBOX_UID, WORKSPACE_DIR, Box, narrow, run_env
from .runner import exec_capped, inherited_data_cap

VERIFY_MIN_MEMORY_MB = 4096
VERIFY_CPUS = 2


def verify_limits(task: TaskSpec) -> Limits:
    """Memory and CPU of a verification container: the task's memory, at least 4 GB; 2 CPUs."""
    return Limits(memory_mb=max(VERIFY_MIN_MEMORY_MB, task.limits.memory_mb), cpus=VERIFY_CPUS)


def verify_env(task: TaskSpec) -> dict[str, str]:
    """The check's environment (``check_env``), its scratch under root-only /checks."""
    return check_env(run_env(task.limits), f"{CHECKS_DIR}/.run")


def verify_in(api: Any, box: Box, workspace: Workspace, task: TaskSpec,
              bank: ReferenceBank | None = None) -> Verdict:
    """Run the task's hidden check on ``workspace`` in ``box`` (a "verify" box) and read its verdict
    (the draw and reference results from ``bank``, when given).

    The verdict's evidence gets ``phases_s``: the host's view of where the time went (copying in,
    the check process); bench/verify_breakdown.py splits the check further with its own evidence.
    """
    t0 = time.monotonic()
    narrow(box, verify_limits(task))
    put_files(box, WORKSPACE_DIR, {p: t.encode() for p, t in workspace.files.items()}, SANDBOX_UID)
    inputs = CheckInputs(task, bank, workspace.ran_clean())
    put_files(box, CHECKS_DIR, inputs.files, 0, 0o600)
    copied = time.monotonic()
    nonce = new_nonce()
    env = {**verify_env(task), "SANDBOX_CHILD_UID": str(SANDBOX_UID)}
    # under runsc the task's data cap holds for the check's whole tree (RLIMIT_DATA is ignored there)
    argv = [*inherited_data_cap(box.runtime, task.limits.data_mb),
            "python", f"{CHECKS_DIR}/check.py", "--workspace", WORKSPACE_DIR]
    ex = exec_capped(api, box, argv,
                     user="0", env=env, timeout_s=CHECK_BUDGET_S, output_limit=CHECK_OUTPUT_CAP,
                     stdin=(nonce + "\n").encode(),
                     # a verification's production runs start as a deployment's, with no `timeout`
                     # anywhere above them (check_kit); the watchdog kills the box at the budget
                     wrap_timeout=False)
    verdict = inputs.verdict(ex.output, nonce, exit_code=ex.exit_code,
                             duration_s=round(ex.duration_s, 3), source="docker", timed_out=ex.timed_out)
    verdict.evidence["phases_s"] = {"copy_in": round(copied - t0, 3), "check": round(ex.duration_s, 3)}
    return verdict
