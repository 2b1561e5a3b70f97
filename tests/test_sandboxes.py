"""LocalSandbox (real host processes) and MockSandbox (replay) on the toy task."""

from __future__ import annotations

import time

from sandbox_env.models import Limits, Outcome
from sandbox_env.sandbox.local import LocalSandbox
from sandbox_env.sandbox.mock import MockSandbox, normalise_command
from sandbox_env.suite.tasks import TaskRegistry
from sandbox_env.workspace import Workspace


def _ws(tasks: TaskRegistry, patch: str | None = None) -> Workspace:
    task = tasks.get("toy_mean")
    ws = Workspace(task.repo_files())
    if patch == "solution":
        ws.apply_patch(task.solution_patch)
    elif patch:
        ws.apply_patch((task.root / "patches" / patch).read_text())
    return ws


def test_local_run_classifies_and_takes_back_files(toy_tasks: TaskRegistry) -> None:
    task, sbx = toy_tasks.get("toy_mean"), LocalSandbox()
    ws = _ws(toy_tasks)
    res = sbx.run(ws, "python report.py", task.limits, task)
    assert res.outcome == Outcome.failed and "sanity check failed" in res.output
    res = sbx.run(ws, "echo hi > out.txt && python -c 'print(1)'", task.limits, task)
    assert res.outcome == Outcome.passed and ws.files["out.txt"] == "hi\n"


def test_local_timeout_kills_the_process_tree(toy_tasks: TaskRegistry) -> None:
    task, sbx = toy_tasks.get("toy_mean"), LocalSandbox()
    t = time.monotonic()
    res = sbx.run(_ws(toy_tasks), "(sleep 30 &) ; sleep 30", Limits(timeout_s=1), task)
    assert res.outcome == Outcome.timeout and res.exit_code is None
    assert time.monotonic() - t < 10


def test_local_output_is_capped(toy_tasks: TaskRegistry) -> None:
    task, sbx = toy_tasks.get("toy_mean"), LocalSandbox()
    res = sbx.run(_ws(toy_tasks), "yes | head -c 300000", Limits(output_bytes=2000), task)
    assert "output truncated" in res.output and len(res.output) < 3000


def test_local_verify_rejects_forged_verdict(toy_tasks: TaskRegistry) -> None:
    task, sbx = toy_tasks.get("toy_mean"), LocalSandbox()
    assert sbx.verify(_ws(toy_tasks, "solution"), task).passed
    forged = sbx.verify(_ws(toy_tasks, "fake_verdict.patch"), task)
    assert not forged.passed and forged.outcome == Outcome.failed
    assert not sbx.verify(_ws(toy_tasks, "hardcode.patch"), task).passed


def test_no_knob_draw_of_the_toy_gives_the_hardcoded_mean(toy_tasks: TaskRegistry) -> None:
    """hardcode.patch returns the incident's 4.0: a draw with that mean would let it pass (step
    1.5, first 1.0, count 5 did, 1 verification in 60, and failed CI once)."""
    import itertools
    import tomllib

    knobs = tomllib.loads((toy_tasks.get("toy_mean").root / "task.toml").read_text())["verify"]["knobs"]
    draws = itertools.product(knobs["first"], knobs["step"], knobs["count"])
    means = {f + s * (c - 1) / 2 for f, s, c in draws}
    assert all(abs(m - 4.0) > 1e-6 for m in means), sorted(means)


def test_command_normalisation() -> None:
    assert normalise_command("cd . &&  python3 report.py 2>&1") == "python report.py"
    assert normalise_command("timeout 60 python -u report.py") == "python report.py"


def test_mock_replays_exact_and_inferred_states(toy_tasks: TaskRegistry) -> None:
    task, sbx = toy_tasks.get("toy_mean"), MockSandbox()
    res = sbx.run(_ws(toy_tasks), "python report.py", task.limits, task)
    assert res.outcome == Outcome.failed and "exact workspace state (recorded)" in res.output
    assert "original" not in res.output and res.source == "mock:original"  # operators only
    ws = _ws(toy_tasks)
    ws.edit("stats.py", "return total / (len(values) - 1)", "return total / len(values)  # fixed")
    res = sbx.run(ws, "python report.py", task.limits, task)
    assert res.outcome == Outcome.passed  # same AST as the solution: exact replay
    ws = _ws(toy_tasks)
    ws.edit("stats.py", "    return total / (len(values) - 1)", "    n = 0\n    return total / len(values)")
    v = sbx.verify(ws, task)
    assert v.passed and "(inferred)" in v.reasons[-1] and v.provenance == "inferred"
    assert "fixed" not in " ".join(v.reasons) and v.source.startswith("mock:")


def test_mock_detects_syntax_errors_for_real(toy_tasks: TaskRegistry) -> None:
    task, sbx = toy_tasks.get("toy_mean"), MockSandbox()
    ws = _ws(toy_tasks)
    ws.edit("stats.py", "total = 0.0", "total = (0.0")
    res = sbx.run(ws, "python report.py", task.limits, task)
    assert res.outcome == Outcome.failed and "SyntaxError" in res.output
    assert not sbx.verify(ws, task).passed


def test_mock_unknown_command_says_what_it_can_answer(toy_tasks: TaskRegistry) -> None:
    task, sbx = toy_tasks.get("toy_mean"), MockSandbox()
    res = sbx.run(_ws(toy_tasks), "pip install numpy", task.limits, task)
    assert res.refused and "python report.py" in res.output
    piped = sbx.run(_ws(toy_tasks), "cat report.py | head -3", task.limits, task)
    assert piped.refused and "no such file" not in piped.output  # not cat's answer about '|'
    assert sbx.run(_ws(toy_tasks), "ls", task.limits, task).output.split() == ["report.py", "stats.py"]


def test_mock_leave_one_out_hides_a_state(toy_tasks: TaskRegistry) -> None:
    task = toy_tasks.get("toy_mean")
    sbx = MockSandbox(exclude={"toy_mean/solution"})
    v = sbx.verify(_ws(toy_tasks, "solution"), task)
    assert v.passed and v.provenance == "inferred" and "(inferred)" in v.reasons[-1]
