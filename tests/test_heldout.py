"""Held-out scoring on the toy task: batches are separate folders, scored by a real backend
(LocalSandbox runs the toy check for real) and by the frozen mock, and reported apart."""

from __future__ import annotations

import shutil
from pathlib import Path

from sandbox_env.quality.heldout import heldout_patches, load, report, save, score
from sandbox_env.sandbox.local import LocalSandbox
from sandbox_env.sandbox.mock import MockSandbox
from sandbox_env.suite.tasks import TaskRegistry

LABELS = """
[[patch]]
file = "{file}"
label = "{label}"
expect = "{expect}"
"""


def _batch(task_dir: Path, batch: str, src: str, label: str, expect: str) -> None:
    d = task_dir / batch
    d.mkdir()
    shutil.copy(task_dir / "patches" / src, d / src)
    (d / "labels.toml").write_text(LABELS.format(file=src, label=label, expect=expect))


def test_batches_are_scored_apart_by_real_and_mock(toy_root: Path, tmp_path: Path) -> None:
    root = tmp_path / "tasks"
    shutil.copytree(toy_root, root)
    toy = root / "toy_mean"
    _batch(toy, "heldout", "alt_sum.patch", "correct", "pass")
    _batch(toy, "heldout2", "hardcode.patch", "cheat", "fail")
    task = TaskRegistry(root).get("toy_mean")
    assert [p.file for p in heldout_patches(task, "heldout2")] == ["hardcode.patch"]
    assert heldout_patches(task, "heldout3") == []
    assert score([task], None, MockSandbox().verify, log=lambda _: None, batch="heldout2",
                 labels=["correct", "wrong"]) == []

    mock = MockSandbox()
    one = score([task], LocalSandbox().verify, mock.verify, log=lambda _: None)
    two = score([task], LocalSandbox().verify, mock.verify, log=lambda _: None, batch="heldout2")
    assert [(r.batch, r.file, r.real_passed, r.real_as_intended) for r in one] == \
        [("heldout", "alt_sum.patch", True, True)]
    assert [(r.batch, r.file, r.real_passed, r.real_as_intended) for r in two] == \
        [("heldout2", "hardcode.patch", False, True)]
    assert two[0].mock_passed is False and not two[0].mock_unsure

    save(one + two, tmp_path / "h.json")
    rows = load(tmp_path / "h.json")
    assert {r.batch for r in rows} == {"heldout", "heldout2"}
    md = report(rows, "local")
    assert "`task_repos/*/heldout/`, `task_repos/*/heldout2/`" in md
    assert "| **all** | 1/1 (100%) | - | 1/1 (100%) |" in md


def test_without_a_real_backend_the_mock_is_scored_against_intent(toy_root: Path, tmp_path: Path) -> None:
    root = tmp_path / "tasks"
    shutil.copytree(toy_root, root)
    # the hardcoded answer labelled correct, on purpose: the mock (rightly) fails it
    _batch(root / "toy_mean", "heldout", "hardcode.patch", "correct", "pass")
    rows = score([TaskRegistry(root).get("toy_mean")], None, MockSandbox().verify, log=lambda _: None)
    assert rows[0].real_passed is None and rows[0].mock_passed is False
    md = report(rows, "none")
    assert "Real checks against" not in md and "Mock against the real verdict" not in md
    assert "| **all** | 1 | 0 | 0/1 (0%) |" in md
    assert "- toy_mean `hardcode.patch` (correct): mock passed=False" in md
