"""Every task's mock classifier on the cases its folder lists in classifier_cases.toml (fixes in
other idioms, wrong fixes, code it must answer UNSURE for): one generic test, so a new task
needs no edit outside its folder."""

from __future__ import annotations

import tomllib

import pytest

from sandbox_env.analysis import UNSURE
from sandbox_env.suite.tasks import TaskRegistry, TaskSpec
from sandbox_env.workspace import apply_patch

from .conftest import ROOT

TASKS = TaskRegistry(ROOT / "task_repos")
CASES_FILE = "classifier_cases.toml"


def data(task: TaskSpec) -> dict:
    path = task.root / CASES_FILE
    return tomllib.loads(path.read_text()) if path.exists() else {}


def cases(task: TaskSpec) -> list[dict[str, str]]:
    return data(task).get("case", [])


ALL = [(t, c) for t in TASKS for c in cases(t)]


@pytest.mark.parametrize(("task", "case"), ALL, ids=[f"{t.id}:{c['name']}" for t, c in ALL])
def test_case_gets_its_label(task: TaskSpec, case: dict[str, str]) -> None:
    files = apply_patch(task.repo_files(), case["patch"])
    assert task.classifier(files) == case["label"], case["name"]


@pytest.mark.parametrize("task", list(TASKS), ids=lambda t: t.id)
def test_every_task_lists_a_varied_mix(task: TaskSpec) -> None:
    mine, mix = cases(task), data(task)
    labels = [c["label"] for c in mine]
    assert len({c["name"] for c in mine}) == len(mine), "case names repeat"
    assert len(mine) >= max(15, mix.get("min_cases", 0)), len(mine)
    assert labels.count("fixed") >= max(3, mix.get("min_fixed", 0)), labels
    assert labels.count(UNSURE) >= max(3, mix.get("min_unsure", 0)), labels
    assert set(mix.get("require_labels", [])) <= set(labels), labels
    assert {c["label"] for c in mine} - {UNSURE} <= {p.behaviour for p in task.patches} | {"bug", "fixed"}
