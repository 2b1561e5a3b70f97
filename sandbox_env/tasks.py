"""Task specs loaded from task_repos/<id>/task.toml, and the registry of all tasks."""

from __future__ import annotations

import importlib.util
import os
import tomllib
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .errors import UnknownTask
from .models import Limits
from .workspace import AST_LOCK

TASK_ROOT_ENV = "SANDBOX_ENV_TASK_ROOT"
_SKIP_PARTS = {"__pycache__", ".pytest_cache", ".git"}


class TaskError(Exception):
    """A task folder is missing or malformed."""


class Concept(BaseModel):
    """One idea a good explanation names, recognised by any of its regexes."""

    model_config = ConfigDict(extra="forbid")
    name: str
    patterns: list[str] = Field(min_length=1)
    weight: float = Field(default=1.0, gt=0)


class Failure(BaseModel):
    model_config = ConfigDict(extra="forbid")
    signature: str
    summary: str = ""


class PatchSpec(BaseModel):
    """A labelled candidate patch: correct alternatives, wrong fixes and cheats."""

    model_config = ConfigDict(extra="forbid")
    file: str
    label: Literal["correct", "wrong", "cheat"]
    behaviour: str
    description: str = ""

    @property
    def should_pass(self) -> bool:
        return self.label == "correct"


Knob = int | float | str | bool


class Entry(BaseModel):
    """Where the kit enters a workspace, said by the task folder instead of assumed by the kit."""

    model_config = ConfigDict(extra="forbid")
    modules: list[str] = Field(default_factory=lambda: ["train"], min_length=1)
    # the modules the repo's own command and the check's driver import first (analyses start here)
    config: str = "config:Config"  # module:attribute of the dataclass the knobs are applied to
    train: str = "train:train"  # module:function the check's driver calls with that config


class Verify(BaseModel):
    """How a verification varies what agent code sees, so it cannot special-case the check.

    ``knobs``: per config field, the values one verification draws from (uniformly, fresh per
    verification); the reference fix is run under the same draw. ``production_dir``: the
    absolute directory the job runs from in production (the incident report's paths): every
    verification also runs the agent's code from there, so code that keys on where it runs
    (``/workspace`` vs production) is exercised on both sides.
    """

    model_config = ConfigDict(extra="forbid")
    production_dir: str = Field(pattern=r"^/srv/[A-Za-z0-9._/-]+$")
    knobs: dict[str, list[Knob]] = Field(default_factory=dict)
    # how the kit driver calls ``entry.train`` (check_kit / kit_driver)
    world_size: int = Field(default=0, ge=0, le=8)  # 0: one process; N: N gloo ranks
    call: list[Literal["cfg", "rank", "world_size"]] = Field(default_factory=lambda: ["cfg"])
    set: dict[str, Knob] = Field(default_factory=dict)  # config fields the driver sets; "$port"
    process_group_timeout_s: float | None = None  # the driver opens the process group itself
    probe: str | None = None  # a module of checks/ measuring inside the driver (install, report)
    timeout_s: float = Field(default=120, gt=0)  # wall time of one driver run
    run_timeout_s: float = Field(default=120, gt=0)  # wall time of one run of run_command
    atol: float = 1e-5  # results vs the reference run
    rtol: float = 1e-4
    param_atol: float | None = None  # trained parameters vs the reference run (default: atol)
    param_rtol: float | None = None
    ignore: list[str] = Field(default_factory=list)  # result paths (regexes) not compared
    replica_atol: float = 1e-6  # trained parameters of every rank vs rank 0

    @field_validator("knobs")
    @classmethod
    def _non_empty(cls, v: dict[str, list[Knob]]) -> dict[str, list[Knob]]:
        empty = [k for k, vals in v.items() if not vals]
        if empty:
            raise ValueError(f"knobs without values: {empty}")
        return v


class TaskSpec(BaseModel):
    """Everything the environment knows about one task, read from its folder."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)
    id: str
    root: Path
    title: str
    difficulty: Literal["easy", "medium", "hard"]
    max_steps: int = Field(ge=2, le=200)
    run_command: str
    signal_files: list[str]
    incident_report: str
    hints: list[str] = Field(default_factory=list)
    reference_explanation: str = ""
    notes: str = ""
    failure: Failure
    concepts: list[Concept] = Field(min_length=1)
    limits: Limits = Field(default_factory=Limits)
    patches: list[PatchSpec] = Field(default_factory=list)
    entry: Entry = Field(default_factory=Entry)
    verify: Verify | None = None  # None only for torch-free fixture tasks

    @property
    def repo_dir(self) -> Path:
        return self.root / "repo"

    @property
    def checks_dir(self) -> Path:
        return self.root / "checks"

    @property
    def traces_dir(self) -> Path:
        return self.root / "traces"

    @cached_property
    def solution_patch(self) -> str:
        return (self.root / "solution.patch").read_text()

    def patch_text(self, patch: PatchSpec) -> str:
        return (self.root / "patches" / patch.file).read_text()

    def repo_files(self) -> dict[str, str]:
        """The original workspace: relative POSIX path -> text (a fresh copy each call)."""
        return dict(self._repo_files)

    @cached_property
    def _repo_files(self) -> dict[str, str]:
        files: dict[str, str] = {}
        for p in sorted(self.repo_dir.rglob("*")):
            rel = p.relative_to(self.repo_dir)
            if p.is_file() and not _SKIP_PARTS.intersection(rel.parts):
                files[rel.as_posix()] = p.read_text()
        return files

    @cached_property
    def classifier(self) -> Callable[[dict[str, str]], str]:
        """The task's static classifier (mock mode): workspace files -> behaviour label."""
        path = self.root / "classifier.py"
        spec = importlib.util.spec_from_file_location(f"sandbox_task_{self.id}_classifier", path)
        if spec is None or spec.loader is None:
            raise TaskError(f"{self.id}: cannot load {path}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        fn = getattr(module, "classify", None)
        if not callable(fn):
            raise TaskError(f"{self.id}: classifier.py defines no classify(files)")

        def classify(files: dict[str, str]) -> str:
            with AST_LOCK:  # classifiers parse with ast (see workspace.AST_LOCK)
                return fn(files)

        return classify


def load_task(root: Path) -> TaskSpec:
    """Read one task folder; raises TaskError naming the file and the problem."""
    toml_path = root / "task.toml"
    try:
        data = tomllib.loads(toml_path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise TaskError(f"{toml_path}: {exc}") from exc
    labels = root / "patches" / "labels.toml"
    if labels.exists():
        data["patches"] = tomllib.loads(labels.read_text()).get("patch", [])
    try:
        spec = TaskSpec(id=root.name, root=root, **data)
    except ValidationError as exc:
        raise TaskError(f"{toml_path}: {exc}") from exc
    for required in ("repo", "checks/check.py", "solution.patch", "classifier.py"):
        if not (root / required).exists():
            raise TaskError(f"{root.name}: missing {required}")
    return spec


def default_task_root() -> Path:
    env = os.environ.get(TASK_ROOT_ENV)
    if env:
        return Path(env)
    return Path(__file__).resolve().parent.parent / "task_repos"


class TaskRegistry:
    """All tasks under one root, by id."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root or default_task_root()
        if not self.root.is_dir():
            raise TaskError(f"task root {self.root} does not exist (set {TASK_ROOT_ENV})")
        self._tasks = {
            p.name: load_task(p)
            for p in sorted(self.root.iterdir())
            if (p / "task.toml").exists()
        }

    def get(self, task_id: str) -> TaskSpec:
        try:
            return self._tasks[task_id]
        except KeyError:
            raise UnknownTask(task_id, self.ids()) from None

    def ids(self) -> list[str]:
        return list(self._tasks)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._tasks.values())

    def __len__(self) -> int:
        return len(self._tasks)
