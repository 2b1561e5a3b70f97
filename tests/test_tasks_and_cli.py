"""Task loading (errors name the file), the action models, and the CLI end to end (mock)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox_env.environment import InvalidAction, parse_action
from sandbox_env.models import EditFile, ReadFile
from sandbox_env.suite.tasks import TaskError, TaskRegistry, UnknownTask

from .conftest import FIXTURE_TASKS


def test_unknown_task_lists_available(toy_tasks: TaskRegistry) -> None:
    with pytest.raises(UnknownTask) as err:
        toy_tasks.get("nope")
    assert "toy_mean" in str(err.value)


def test_malformed_task_names_file_and_field(tmp_path: Path) -> None:
    shutil.copytree(FIXTURE_TASKS / "toy_mean", tmp_path / "broken")
    toml = tmp_path / "broken" / "task.toml"
    toml.write_text(toml.read_text().replace('difficulty = "easy"', 'difficulty = "trivial"'))
    with pytest.raises(TaskError, match=r"(?s)task\.toml.*difficulty"):
        TaskRegistry(tmp_path)
    good = (FIXTURE_TASKS / "toy_mean" / "task.toml").read_text()
    toml.write_text(good.replace("torch = false", "torch = false\nworld_size = 2"))
    with pytest.raises(TaskError, match=r"(?s)task\.toml.*torch-free project"):
        TaskRegistry(tmp_path)
    toml.write_text(good.replace("[verify]", "[unverified]"))
    with pytest.raises(TaskError, match=r"(?s)task\.toml.*verify"):
        TaskRegistry(tmp_path)
    toml.write_text("title = [unclosed")
    with pytest.raises(TaskError, match=r"task\.toml"):
        TaskRegistry(tmp_path)
    # a concept pattern escaped twice in a TOML literal string, or not a regex at all
    toml.write_text(good.replace(r"'len\(values\) - 1'", r"'len\\(values\\) - 1'"))
    with pytest.raises(TaskError, match=r"(?s)task\.toml.*matches a literal backslash"):
        TaskRegistry(tmp_path).get("broken")
    toml.write_text(good.replace(r"'len\(values\) - 1'", r"'len(values - 1'"))
    with pytest.raises(TaskError, match=r"(?s)task\.toml.*is not a regex"):
        TaskRegistry(tmp_path).get("broken")
    toml.write_text(good.replace('signature = "', 'signature = "\\\\\\\\d+ '))
    with pytest.raises(TaskError, match=r"(?s)task\.toml.*failure signature .* matches a literal backslash"):
        TaskRegistry(tmp_path).get("broken")


def test_action_models_are_strict() -> None:
    assert isinstance(parse_action({"action_type": "read_file", "filename": "a.py"}), ReadFile)
    e = parse_action({"action_type": "edit_file", "filename": "a", "old_str": "x", "new_str": "y",
                      "metadata": {"k": 1}})
    assert isinstance(e, EditFile)
    with pytest.raises(InvalidAction, match="file_name"):
        parse_action({"action_type": "read_file", "filename": "a", "file_name": "b"})
    with pytest.raises(InvalidAction, match="command"):
        parse_action({"action_type": "execute_bash", "command": ""})
    with pytest.raises(InvalidAction):
        parse_action(["read_file"])


def cli(*args: str, root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sandbox_env.cli", "--task-root", str(root), *args],
                          capture_output=True, text=True, timeout=120, check=False)


def test_cli_tasks_run_play(toy_root: Path) -> None:
    out = cli("tasks", "--json", root=toy_root)
    assert out.returncode == 0 and json.loads(out.stdout)[0]["id"] == "toy_mean"
    assert {"category", "difficulty", "train", "test"} <= set(json.loads(out.stdout)[0])
    listing = cli("tasks", root=toy_root).stdout.splitlines()
    assert listing[0].split()[:3] == ["id", "category", "difficulty"] and listing[1].startswith("toy_mean")
    out = cli("run", "toy_mean", "--mode", "mock", root=toy_root)
    assert "sanity check failed" in out.stdout and "[mock] exit=1 outcome=failed" in out.stdout
    out = cli("run", "toy_mean", "--mode", "local", "--patch", "solution", "--verify", root=toy_root)
    assert "mean=4.000" in out.stdout and '"passed": true' in out.stdout
    out = cli("play", "toy_mean", "--oracle", root=toy_root)
    assert out.returncode == 0 and "verified=True" in out.stdout
    out = cli("run", "missing", root=toy_root)
    assert out.returncode == 2 and "available: toy_mean" in out.stderr


def test_docker_mode_without_engine_fails_fast_with_reason(toy_root: Path) -> None:
    import os
    import time

    t = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "sandbox_env.cli", "--task-root", str(toy_root), "serve",
                          "--mode", "docker", "--port", "1"], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "DOCKER_HOST": "unix:///nonexistent/docker.sock"}, check=False)
    assert out.returncode == 2 and "docker mode requested but" in out.stderr
    assert time.monotonic() - t < 30


def test_the_suite_serves_a_held_out_family() -> None:
    """At least one served family has every variant in the test split: `eval --split test` plays
    an unseen bug type whole, and no variant of it is in the train split."""
    tasks = TaskRegistry()
    held = [f for f in tasks.ids() if (d := tasks.variants_data(f)) is not None and not d.train]
    assert held, "no held-out family"
    for family in held:
        data = tasks.variants_data(family)
        assert data is not None
        mine = {a for a in tasks.variant_ids("test") if a.partition("@")[0] == family}
        assert len(mine) == data.count
        assert not [a for a in tasks.variant_ids("train") if a.partition("@")[0] == family]
