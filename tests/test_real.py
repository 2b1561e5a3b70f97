"""Each task repo run for real with host torch: it shows its failure signature; the fix passes."""

from __future__ import annotations

import pytest

from sandbox_env.models import Outcome
from sandbox_env.sandbox.local import LocalSandbox
from sandbox_env.suite.tasks import TaskRegistry
from sandbox_env.workspace import Workspace

from .test_task_suite import TASK_IDS
from .tiers import rotating

pytest.importorskip("torch")
pytestmark = pytest.mark.real


@pytest.mark.parametrize("task_id", rotating(TASK_IDS, "SANDBOX_ENV_TASK_SLICE", 4))  # tests/tiers.py
def test_repo_fails_for_real_and_reference_fix_passes(task_id: str, real_tasks: TaskRegistry) -> None:
    task, sbx = real_tasks.get(task_id), LocalSandbox()
    ws = Workspace(task.repo_files())
    res = sbx.run(ws, task.run_command, task.limits, task)
    # reproduced when the signature shows (a silent family's run exits 0 with its audit line)
    assert task.failure.shows_in(res.output), res.output[-3000:]
    assert not sbx.verify(Workspace(task.repo_files()), task).passed

    fixed = Workspace(task.repo_files())
    fixed.apply_patch(task.solution_patch)
    res = sbx.run(fixed, task.run_command, task.limits, task)
    assert res.outcome == Outcome.passed, res.output[-3000:]
    verdict = sbx.verify(fixed, task)
    assert verdict.passed, verdict.reasons
