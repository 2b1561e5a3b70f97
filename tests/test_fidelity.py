"""Mock/real agreement measured leave-one-out over every labelled state (>= 98%)."""

from __future__ import annotations

from sandbox_env.quality.fidelity import measure_task, report
from sandbox_env.sandbox.mock import MockSandbox
from sandbox_env.suite.tasks import TaskRegistry
from sandbox_env.workspace import Workspace


def test_leave_one_out_agreement_over_all_tasks(real_tasks: TaskRegistry) -> None:
    rows = [r for t in real_tasks for r in measure_task(t)]
    assert len(rows) >= 4 * 13, "every task needs docker traces for its labelled states"
    text, rate = report(rows)
    assert rate >= 0.98, text
    for t in real_tasks:
        mine = [r for r in rows if r.task == t.id]
        assert mine, f"{t.id} has no docker traces: run `sandbox-env record {t.id}`"
        assert sum(r.agrees for r in mine) / len(mine) >= 0.95, text


def test_unrecorded_behaviour_gives_an_inferred_verdict_that_says_so(toy_tasks: TaskRegistry) -> None:
    task = toy_tasks.get("toy_mean")
    hide_all = {f"toy_mean/{s}" for s in ("original", "solution", "patch:alt_sum.patch",
                                          "patch:hardcode.patch", "patch:fake_verdict.patch")}
    ws = Workspace(task.repo_files())
    ws.apply_patch(task.solution_patch)
    v = MockSandbox(exclude=hide_all).verify(ws, task)
    assert v.passed and v.source == "mock:inferred" and "nothing was measured" in v.reasons[0]
