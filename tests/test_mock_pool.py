"""The mock's classifier processes give the verdicts the in-thread classifier gives, and a
classifier that breaks in a worker is reported as the classifier's failure, not the agent's."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sandbox_env.models import Outcome
from sandbox_env.sandbox.mock import MockSandbox
from sandbox_env.suite.tasks import TaskRegistry
from sandbox_env.workspace import Workspace

FIXED = "    return total / len(values)\n"


def _states(task) -> list[Workspace]:  # type: ignore[no-untyped-def]
    base = task.repo_files()["stats.py"]
    fixed = base.replace("    return total / (len(values) - 1)\n", FIXED)
    unsure = base.replace("    return total / (len(values) - 1)\n",  # not a returned division: unsure
                          "    out = sum(values) / len(values)\n    return out\n")
    return [Workspace({**task.repo_files(), "stats.py": text + f"\n_never_recorded_{i} = {i}\n"})
            for i, text in enumerate((base, fixed, unsure))]


def test_workers_agree_with_the_in_thread_classifier(toy_tasks: TaskRegistry) -> None:
    task = toy_tasks.get("toy_mean")
    inline, pooled = MockSandbox(), MockSandbox(workers=2)
    try:
        a = [inline.verify(w, task) for w in _states(task)]
        b = [pooled.verify(w, task) for w in _states(task)]
        assert pooled._pool is not None  # the states really went to the worker processes
    finally:
        pooled.close()
    expected = [(False, "inferred"), (True, "inferred"), (False, "unsure")]
    assert [(v.passed, v.provenance) for v in a] == expected
    assert [(v.passed, v.provenance, v.source) for v in b] == [(v.passed, v.provenance, v.source) for v in a]
    assert pooled._pool is None  # closed


def test_a_classifier_crash_in_a_worker_is_not_the_agents_failure(toy_root: Path, tmp_path: Path,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    root = tmp_path / "tasks"
    shutil.copytree(toy_root, root)
    (root / "toy_mean" / "classifier.py").write_text("def classify(files):\n    raise RuntimeError('boom')\n")
    task = TaskRegistry(root).get("toy_mean")
    mock = MockSandbox(workers=1)
    try:
        v = mock.verify(_states(task)[1], task)
    finally:
        mock.close()
    assert v.outcome == Outcome.infra_error and not v.passed
    assert "could not analyse this workspace state (RuntimeError)" in " ".join(v.reasons)
    assert "boom" not in " ".join(v.reasons) and "boom" in caplog.text  # the detail: operators' log
