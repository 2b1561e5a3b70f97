"""Trace recording: re-recording a state gives the same trace apart from volatile details."""

from __future__ import annotations

from pathlib import Path

from sandbox_env.sandbox.local import LocalSandbox
from sandbox_env.suite.tasks import TaskRegistry
from sandbox_env.suite.traces import (
    Provenance,
    load_traces,
    record_task,
    scrub,
    task_states,
    trace_differences,
)


def test_scrub_masks_only_volatile_details() -> None:
    a = "2026-11-30 15:46:53,747 epoch 0 val_loss 0.4473 (1.1s) pid 123 tcp://127.0.0.1:45678 /tmp/x1/y"
    b = "2026-12-01 09:00:00,001 epoch 0 val_loss 0.4473 (9.9s) pid 456 tcp://127.0.0.1:51000 /tmp/z9/y"
    assert scrub(a) == scrub(b)
    assert scrub(a) != scrub(a.replace("0.4473", "0.4474"))


def test_rerecording_is_deterministic(toy_tasks: TaskRegistry, tmp_path: Path) -> None:
    task = toy_tasks.get("toy_mean")
    committed = {t.state: t for t in load_traces(task)}
    again = record_task(task, LocalSandbox(), Provenance(source="local"), log=lambda *_: None,
                        out_dir=tmp_path)
    assert {t.state for t in again} == set(committed)
    for new in again:
        assert trace_differences(committed[new.state], new) == [], new.state
    changed = again[0].model_copy(deep=True)
    changed.runs[0].output += "\nextra line"
    assert trace_differences(committed[changed.state], changed) == [
        f"run {changed.runs[0].command!r}: output differs"]


def test_verdict_reasons_are_compared_under_the_same_draw(toy_tasks: TaskRegistry) -> None:
    """Reasons quote the drawn knobs and what they yield: a re-recording under another draw may
    word them differently, one under the same draw may not."""
    old = load_traces(toy_tasks.get("toy_mean"))[0]
    assert old.verdict.evidence.get("knobs")  # the kit's check records its draw
    reworded = old.model_copy(deep=True)
    reworded.verdict.reasons = [*old.verdict.reasons, "another reason"]
    assert trace_differences(old, reworded) == ["verdict reasons differ"]
    reworded.verdict.evidence["knobs"] = {**old.verdict.evidence["knobs"], "count": -1}
    assert trace_differences(old, reworded) == []
    reworded.verdict.passed = not old.verdict.passed
    assert trace_differences(old, reworded) != []


def test_a_trace_judged_by_another_check_is_stale(toy_tasks: TaskRegistry, tmp_path: Path) -> None:
    """Recording stamps the check's digest; a change to the check (or the kit, verify data,
    reference fix) makes every trace stale, a change to one patch only that state's."""
    import shutil

    from sandbox_env.suite.traces import check_digest, missing_states, stale_states

    task = toy_tasks.get("toy_mean")
    assert stale_states(task) == set()
    assert {t.provenance.check for t in load_traces(task)} == {check_digest(task)}
    copy = tmp_path / "toy_mean"
    shutil.copytree(task.root, copy)
    (copy / "checks" / "check.py").write_text((copy / "checks" / "check.py").read_text() + "\n# changed\n")
    changed = TaskRegistry(tmp_path).get("toy_mean")
    assert check_digest(changed) != check_digest(task)
    assert stale_states(changed) == {s for s, _, _ in task_states(changed)}
    assert missing_states(changed) == set()


def test_reverify_takes_the_verdict_again_and_keeps_the_runs(toy_tasks: TaskRegistry, tmp_path: Path) -> None:
    """After a check change, reverify_task verifies each stale state again under the current
    check and keeps its recorded runs; a trace of other files is left for a full recording."""
    import shutil

    from sandbox_env.suite.traces import check_digest, reverify_task, stale_states

    copy = tmp_path / "toy_mean"
    shutil.copytree(toy_tasks.get("toy_mean").root, copy)
    (copy / "checks" / "check.py").write_text((copy / "checks" / "check.py").read_text() + "\n# changed\n")
    task = TaskRegistry(tmp_path).get("toy_mean")
    before = {t.state: t for t in load_traces(task)}
    edited = next(iter(before.values()))
    (task.traces_dir / edited.file_name).write_text(
        edited.model_copy(update={"workspace_hash": "sha256:other"}).model_dump_json())
    lines: list[str] = []
    pairs = reverify_task(task, LocalSandbox(), Provenance(source="local", torch=edited.provenance.torch),
                          log=lines.append)
    assert {old.state for old, _ in pairs} == set(before) - {edited.state}
    assert any("skipped" in line and edited.state in line for line in lines)
    assert stale_states(task) == {edited.state}
    for t in load_traces(task):
        if t.state == edited.state:
            continue
        assert t.provenance.check == check_digest(task) and t.provenance.verified_at
        assert t.provenance.recorded_at == before[t.state].provenance.recorded_at
        assert t.runs == before[t.state].runs
        assert t.verdict.passed == before[t.state].verdict.passed
        assert trace_differences(before[t.state], t) == []
