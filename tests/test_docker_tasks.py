"""The four tasks in real containers: the failure reproduces with its signature, the reference
fix passes, and a patch of each label (correct / wrong / cheat) gets its label.

Every labelled patch is verified in Docker by `sandbox-env record` (the committed traces, whose
freshness and labels test_task_suite checks); this test re-runs a sample within CI's time.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from sandbox_env.models import Outcome
from sandbox_env.tasks import TaskRegistry
from sandbox_env.workspace import Workspace

from .test_docker import CLIENT  # skips the module when no engine / image
from .test_task_suite import TASK_IDS

pytestmark = pytest.mark.docker
assert CLIENT is not None

from sandbox_env.sandbox.docker import DockerSandbox  # noqa: E402


@pytest.fixture(scope="module")
def sbx() -> Iterator[DockerSandbox]:
    s = DockerSandbox(owner="pytest-docker-tasks", pool_size=1)
    yield s
    s.close()


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_task_reproduces_and_verdicts_match_labels(task_id: str, real_tasks: TaskRegistry,
                                                   sbx: DockerSandbox) -> None:
    task = real_tasks.get(task_id)
    ws = Workspace(task.repo_files())
    res = sbx.run(ws, task.run_command, task.limits, task)
    assert res.outcome in (Outcome.failed, Outcome.oom_killed, Outcome.timeout), res.output[-2000:]
    assert re.search(task.failure.signature, res.output), res.output[-3000:]
    assert not sbx.verify(Workspace(task.repo_files()), task).passed

    fixed = Workspace(task.repo_files())
    fixed.apply_patch(task.solution_patch)
    verdict = sbx.verify(fixed, task)
    assert verdict.passed, verdict.reasons

    for label in ("correct", "wrong", "cheat"):
        patch = next(p for p in task.patches if p.label == label)
        ws = Workspace(task.repo_files())
        ws.apply_patch(task.patch_text(patch))
        v = sbx.verify(ws, task)
        assert v.outcome != Outcome.infra_error, v.reasons
        assert v.passed == patch.should_pass, (patch.file, v.reasons)


def test_certify_one_run(real_tasks: TaskRegistry, sbx: DockerSandbox) -> None:
    from sandbox_env.certify import certify_task, markdown

    result = certify_task(real_tasks.get("compile_graph_break"), sbx, runs=1, log=lambda _: None)
    assert result.certified, result.notes
    assert "| compile_graph_break | 1/1 | 1/1 |" in markdown([result], {"source": "docker"})
