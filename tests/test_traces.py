"""Trace recording: re-recording a state gives the same trace apart from volatile details."""

from __future__ import annotations

from pathlib import Path

from sandbox_env.sandbox.local import LocalSandbox
from sandbox_env.tasks import TaskRegistry
from sandbox_env.traces import Provenance, load_traces, record_task, scrub, trace_differences


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
