"""Task specs loaded from task_repos/<id>/task.toml, and the registry of all tasks."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import threading
import tomllib
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..errors import UnknownTask, UnknownVariant, VariantNotCertified
from ..kit import check_runtime
from ..models import Limits
from ..workspace import AST_LOCK, Workspace
from .variants import VariantManifest, VariantsData, load_variants_data, repo_hash, to_base

TASK_ROOT_ENV = "SANDBOX_ENV_TASK_ROOT"
BLIND_PREFIX = "incident-"
_SKIP_PARTS = {"__pycache__", ".pytest_cache", ".git"}


class TaskError(Exception):
    """A task folder is missing or malformed."""


class Concept(BaseModel):
    """One idea a good explanation names, recognised by any of its regexes."""

    model_config = ConfigDict(extra="forbid")
    name: str
    patterns: list[str] = Field(min_length=1)
    weight: float = Field(default=1.0, gt=0)

    @field_validator("patterns")
    @classmethod
    def _regexes(cls, patterns: list[str]) -> list[str]:
        return [task_regex(p, "concept pattern") for p in patterns]


class Failure(BaseModel):
    model_config = ConfigDict(extra="forbid")
    signature: str
    summary: str = ""

    @field_validator("signature")
    @classmethod
    def _regex(cls, signature: str) -> str:
        return task_regex(signature, "failure signature")

    def shows_in(self, output: str) -> bool:
        """The failure is reproduced when its signature shows in a run's output, whatever the exit
        code: a silent failure's run exits 0 and shows its symptom in an audit line."""
        return bool(re.search(self.signature, output))


def task_regex(p: str, what: str) -> str:
    """A regex of task.toml: it compiles, and it does not match a literal backslash (in a TOML
    literal string, '...', a regex escape takes one backslash: '\\\\d' would look for a backslash)."""
    try:
        re.compile(p)
    except re.error as exc:
        raise ValueError(f"{what} {p!r} is not a regex: {exc}") from None
    if "\\\\" in p:
        raise ValueError(f"{what} {p!r} matches a literal backslash: write regex escapes with one "
                         "backslash in a TOML literal string ('\\d', not '\\\\d')")
    return p


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
    # the world sizes a verification draws its driver runs' from (the repo's own command keeps
    # its defaults, world_size); "$world" in ``set`` is the drawn one; the time limit follows it
    world_sizes: list[int] = Field(default_factory=list)
    call: list[Literal["cfg", "rank", "world_size"]] = Field(default_factory=lambda: ["cfg"])
    set: dict[str, Knob] = Field(default_factory=dict)  # config fields the driver sets; "$port"
    process_group_timeout_s: float | None = None  # the driver opens the process group itself
    probe: str | None = None  # a module of checks/ measuring inside the driver (install, report)
    torch: bool = True  # false: a pure-Python project (the driver neither imports nor guards torch)
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

    @model_validator(mode="after")
    def _torch_free_runs_alone(self) -> Verify:
        if not self.torch and self.world_size:
            raise ValueError("a torch-free project (torch = false) runs in one process: world_size 0")
        if self.world_sizes and (not self.world_size or any(not 2 <= w <= 8 for w in self.world_sizes)):
            raise ValueError("world_sizes: 2..8 ranks each, for a task with a world_size")
        return self


class TaskSpec(BaseModel):
    """Everything the environment knows about one task, read from its folder."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)
    id: str
    root: Path
    title: str
    category: str = Field(default="", max_length=40, description="the kind of failure (memory, "
                          "distributed, compile, numerics, data, checkpointing, autograd, ...)")
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
    verify: Verify
    variant: VariantManifest | None = None  # set for a generated variant >= 1 (sandbox_env/suite/variants.py)

    @property
    def family(self) -> str:
        """The task family (the folder under task_repos/); a plain task is its own family."""
        return self.variant.family if self.variant is not None else self.id

    @property
    def variant_index(self) -> int:
        return self.variant.index if self.variant is not None else 0

    @property
    def address(self) -> str:
        """``family@N``: names this exact variant in a reset whatever seed comes with it."""
        return f"{self.family}@{self.variant_index}"

    @cached_property
    def repo_hash(self) -> str:
        """Exact content hash of the original workspace (variants.repo_hash)."""
        return repo_hash(self._repo_files)

    @property
    def repo_dir(self) -> Path:
        return self.root / "repo"

    @property
    def checks_dir(self) -> Path:
        return self.root / "checks"

    @property
    def traces_dir(self) -> Path:
        """Recorded real runs: the task's ``traces/``; a variant's, in its family's folder
        (``variants/traces/<N>/``, committed with the family; the variant cache is disposable)."""
        if self.variant is None:
            return self.root / "traces"
        return Path(self.variant.base_root) / "variants" / "traces" / str(self.variant.index)

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
    def base_task(self) -> TaskSpec:
        """Variant 0 of this task's family (the task itself unless it is a variant >= 1)."""
        return self if self.variant is None else _load_cached(self.variant.base_root)

    @cached_property
    def classifier(self) -> Callable[[dict[str, str]], str]:
        """The task's static classifier (mock mode): workspace files -> behaviour label.

        A variant's workspace is classified by variant 0's classifier after the inverse rename
        (variants.to_base); when a variant-0 name already occurs in it, the answer is unsure."""
        if self.variant is not None:
            base, manifest = self.base_task, self.variant

            def classify_variant(files: dict[str, str]) -> str:
                mapped = to_base(files, manifest, base.entry.config)
                return "unsure" if mapped is None else base.classifier(mapped)  # analysis.UNSURE

            return classify_variant
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
    """Read one task folder (or a materialised variant's); raises TaskError naming the problem."""
    manifest_path = root / "variant.json"
    if manifest_path.exists():
        return _load_variant(root, manifest_path)
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
    _require(root, spec, "classifier.py")
    return spec


def _load_variant(root: Path, manifest_path: Path) -> TaskSpec:
    """A variant folder written by variant_tasks.materialise (task.json + variant.json)."""
    try:
        manifest = VariantManifest.model_validate_json(manifest_path.read_text())
        data = json.loads((root / "task.json").read_text())
        spec = TaskSpec(id=f"{manifest.family}@{manifest.index}", root=root, variant=manifest, **data)
    except (OSError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
        raise TaskError(f"{root}: {exc}") from exc
    _require(root, spec)
    return spec


_LOADED: dict[str, TaskSpec] = {}
_LOADED_LOCK = threading.Lock()


def _load_cached(root: str) -> TaskSpec:
    with _LOADED_LOCK:
        if root not in _LOADED:
            _LOADED[root] = load_task(Path(root))
        return _LOADED[root]


def _require(root: Path, spec: TaskSpec, *extra: str) -> None:
    for required in ("repo", "checks/check.py", "solution.patch", *extra):
        if not (root / required).exists():
            raise TaskError(f"{root.name}: missing {required}")


def default_task_root() -> Path:
    env = os.environ.get(TASK_ROOT_ENV)
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "task_repos"


class TaskRegistry:
    """All tasks under one root, by id; ``family@N`` addresses a family's generated variant N.

    A variant >= 1 is generated (sandbox_env/suite/variants.py), materialised into the cache
    (variant_tasks.py) and served only if its repo hash is in the family's
    variants_certified.toml, unless ``allow_uncertified`` (default: $SANDBOX_ENV_ALLOW_UNCERTIFIED).
    """

    def __init__(self, root: Path | None = None, *, allow_uncertified: bool | None = None) -> None:
        from .variant_tasks import allow_uncertified_from_env

        self.root = root or default_task_root()
        if not self.root.is_dir():
            raise TaskError(f"task root {self.root} does not exist (set {TASK_ROOT_ENV})")
        self._tasks = {
            p.name: load_task(p)
            for p in sorted(self.root.iterdir())
            if (p / "task.toml").exists()
        }
        self.allow_uncertified = (allow_uncertified_from_env() if allow_uncertified is None
                                  else allow_uncertified)
        self._variants: dict[tuple[str, int], TaskSpec] = {}
        self._lock = threading.Lock()

    def blind_id(self, address: str) -> str:
        """An opaque name of ``family@N`` for blind episodes: a reset with it serves that variant
        while the agent's observation and state name only the opaque id (a family's name often
        says what the bug is). Stable across servers: a hash of the address."""
        return BLIND_PREFIX + hashlib.sha256(address.encode()).hexdigest()[:10]

    def unblind(self, name: str) -> str:
        """The ``family@N`` a blind id names (UnknownTask when none does)."""
        for fid in self.ids():
            data = self.variants_data(fid)
            for i in range(data.count if data is not None else 1):
                if self.blind_id(f"{fid}@{i}") == name:
                    return f"{fid}@{i}"
        raise UnknownTask(name, self.ids())

    def get(self, task_id: str) -> TaskSpec:
        """A task by id, or ``family@N``: variant N of a family (0: the family's folder), or the
        blind id of one (``blind_id``)."""
        if task_id.startswith(BLIND_PREFIX):
            task_id = self.unblind(task_id)
        if "@" in task_id:
            family, _, index = task_id.partition("@")
            if not index.isdigit():
                raise UnknownVariant(task_id, "the variant after '@' must be a non-negative integer",
                                     self.ids())
            return self.variant(family, int(index))
        try:
            return self._tasks[task_id]
        except KeyError:
            raise UnknownTask(task_id, self.ids()) from None

    def resolve(self, task: str | None, seed: int | None) -> TaskSpec | None:
        """The task a reset names: ``family@N``; ``family`` with a seed is variant ``seed`` of a
        family that declares variants (a task without variants ignores the seed); None when no
        task is named (the caller picks one by seed, variant 0)."""
        if task is None:
            return None
        if "@" not in task and seed is not None and self.variants_data(task) is not None:
            return self.variant(task, seed)
        return self.get(task)

    def variants_data(self, family: str) -> VariantsData | None:
        spec = self._tasks.get(family)
        if spec is None:
            raise UnknownTask(family, self.ids())
        return load_variants_data(spec.root)

    def variant(self, family: str, index: int, *, certified_only: bool | None = None) -> TaskSpec:
        """Variant ``index`` of ``family``: UnknownTask / UnknownVariant when there is none,
        VariantNotCertified when it is not certified (and uncertified ones are not allowed)."""
        from .variant_tasks import is_certified, materialise
        from .variants import Family

        base = self._tasks.get(family)
        if base is None:
            raise UnknownTask(family, self.ids())
        name = f"{family}@{index}"
        if index == 0:
            return base
        data = load_variants_data(base.root)
        if data is None:
            raise UnknownVariant(name, f"{family} declares no variants (only {family}@0)", self.ids())
        if not 0 <= index < data.count:
            raise UnknownVariant(name, f"{family} has variants 0..{data.count - 1}", self.ids())
        with self._lock:
            spec = self._variants.get((family, index))
        if spec is None:
            fam = Family(base.root)
            spec = load_task(materialise(fam.generate(index), fam))
            with self._lock:
                spec = self._variants.setdefault((family, index), spec)
        strict = not self.allow_uncertified if certified_only is None else certified_only
        assert spec.variant is not None
        if strict and not is_certified(base.root, index, spec.variant.repo_hash):
            raise VariantNotCertified(
                f"variant {name} (repo {spec.variant.repo_hash}) is not certified: it is not in "
                f"task_repos/{family}/variants_certified.toml. Certify it in docker (docs/variants.md), "
                "or set SANDBOX_ENV_ALLOW_UNCERTIFIED=1 for development")
        return spec

    def variant_ids(self, split: str = "all") -> list[str]:
        """Every addressable variant (``family@N``) of the families that declare variants, in
        ``split`` (train | test | all); a family without variants.toml contributes ``family``."""
        out: list[str] = []
        for fid in self.ids():
            data = self.variants_data(fid)
            if data is None:
                if split in ("all", "train"):
                    out.append(fid)
                continue
            idx = data.train if split == "train" else data.test if split == "test" else range(data.count)
            out += [f"{fid}@{i}" for i in sorted(idx)]
        return out

    def ids(self) -> list[str]:
        return list(self._tasks)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._tasks.values())

    def __len__(self) -> int:
        return len(self._tasks)


def check_files(task: TaskSpec) -> dict[str, bytes]:
    """The files of a verification directory: the task's hidden checks, the check runtime and
    kit, the task's verify data (``verify.json``) and the reference fix (``reference/``: repo/
    with solution.patch applied), which the check runs under its own drawn knobs. Every backend
    keeps this directory away from agent code."""
    files = {p.relative_to(task.checks_dir).as_posix(): p.read_bytes()
             for p in sorted(task.checks_dir.rglob("*"))
             if p.is_file() and "__pycache__" not in p.parts}
    files.update(check_runtime.kit_files())
    files["verify.json"] = json.dumps(verify_data(task), sort_keys=True).encode()
    ref = Workspace(task.repo_files())
    ref.apply_patch(task.solution_patch)
    files.update({f"reference/{p}": t.encode() for p, t in ref.files.items()})
    return files


def files_digest(files: dict[str, bytes]) -> str:
    """What a verdict depends on besides the workspace, hashed: a check's files (``check_files``)."""
    h = hashlib.sha256()
    for name, data in sorted(files.items()):
        h.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    return "sha256:" + h.hexdigest()[:16]


def verify_data(task: TaskSpec) -> dict[str, Any]:
    """What a check knows of its task: the run command and limits, entry points, verify table."""
    return {"task": task.id, "run_command": task.run_command, "timeout_s": task.limits.timeout_s,
            "data_mb": task.limits.data_mb, "entry": task.entry.model_dump(),
            "verify": task.verify.model_dump()}
