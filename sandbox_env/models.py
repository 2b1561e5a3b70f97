"""Pydantic v2 models for every boundary: actions, observations, state, run results, verdicts."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from .sandbox.registry import modes

MAX_TEXT = 200_000  # characters accepted in one edit / explanation
MAX_COMMAND = 10_000
MAX_PATH = 512


class Outcome(StrEnum):
    """How a run or a verification ended, classified from facts, never guessed."""

    passed = "passed"
    failed = "failed"
    timeout = "timeout"
    oom_killed = "oom_killed"
    infra_error = "infra_error"


# --------------------------------------------------------------------------- actions
def _require_action_type(schema: dict[str, Any], _: type) -> None:
    """action_type has a default (handy in code) but the wire format requires it."""
    required = schema.setdefault("required", [])
    if "action_type" not in required:
        required.insert(0, "action_type")


class _Action(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra=_require_action_type)
    metadata: dict[str, Any] = Field(default_factory=dict, description="free-form, ignored")


class ReadFile(_Action):
    """Read one file of the workspace."""

    action_type: Literal["read_file"] = "read_file"
    filename: str = Field(min_length=1, max_length=MAX_PATH)


class EditFile(_Action):
    """Replace exactly one occurrence of old_str by new_str (old_str empty: create a new file)."""

    action_type: Literal["edit_file"] = "edit_file"
    filename: str = Field(min_length=1, max_length=MAX_PATH)
    old_str: str = Field(max_length=MAX_TEXT)
    new_str: str = Field(max_length=MAX_TEXT)


class ExecuteBash(_Action):
    """Run a shell command in the workspace (in a throwaway container in docker mode)."""

    action_type: Literal["execute_bash"] = "execute_bash"
    command: str = Field(min_length=1, max_length=MAX_COMMAND)


class ViewGitDiff(_Action):
    """Unified diff of the workspace against the original repo (one file or all)."""

    action_type: Literal["view_git_diff"] = "view_git_diff"
    filename: str | None = Field(default=None, max_length=MAX_PATH)


class SubmitFix(_Action):
    """End the episode: the fix is verified by hidden checks and the explanation judged."""

    action_type: Literal["submit_fix"] = "submit_fix"
    explanation: str = Field(max_length=MAX_TEXT)


Action = Annotated[
    ReadFile | EditFile | ExecuteBash | ViewGitDiff | SubmitFix,
    Field(discriminator="action_type"),
]
ACTION_ADAPTER: TypeAdapter[Any] = TypeAdapter(Action)
ACTION_TYPES = ("read_file", "edit_file", "execute_bash", "view_git_diff", "submit_fix")


# --------------------------------------------------------------------------- execution
class Limits(BaseModel):
    """Resource limits of one run; tasks set them, the sandbox enforces them."""

    model_config = ConfigDict(extra="forbid")
    timeout_s: float = Field(default=120.0, gt=0, le=3600)
    memory_mb: int = Field(default=2048, ge=64)
    data_mb: int | None = Field(default=None, ge=64, description="RLIMIT_DATA, if set")
    cpus: float = Field(default=1.0, gt=0, le=64)
    pids: int = Field(default=256, ge=16)
    output_bytes: int = Field(default=64_000, ge=1_000)


class RunResult(BaseModel):
    """What one command did."""

    command: str
    output: str
    exit_code: int | None
    outcome: Outcome
    duration_s: float
    changed_files: dict[str, str] = Field(default_factory=dict)
    source: str = Field(default="", description="docker | local | mock replay provenance")


class Verdict(BaseModel):
    """What the hidden checks concluded about a workspace."""

    passed: bool
    outcome: Outcome
    reasons: list[str] = Field(default_factory=list)
    evidence: dict[str, Any] = Field(default_factory=dict)
    duration_s: float = 0.0
    source: str = ""


# --------------------------------------------------------------------------- episode
Mode = Literal[modes()]  # type: ignore[valid-type]  # the registered sandbox backends
RunStatus = Literal["not_run", "failing", "passing", "unknown"]


class Observation(BaseModel):
    """What the agent sees after reset and after every step (seed-compatible fields first)."""

    task_name: str
    task_description: str
    terminal_output: str = ""
    current_files: dict[str, str] = Field(
        default_factory=dict,
        description="path -> content of every workspace file (the seed's form); in a compact "
        "episode (reset with compact=true) every file on reset, then only the files read or "
        "changed by the step (see `files` for the full list)",
    )
    run_status: RunStatus = "not_run"
    system_status: str = "idle"
    step_number: int = 0
    max_steps: int
    budget_remaining: int
    actions_taken: list[str] = Field(default_factory=list)
    hint: str | None = None
    instructions: str = ""
    done: bool = False
    reward: float = 0.0
    episode_id: str
    mode: Mode
    files: list[str] = Field(default_factory=list)
    verdict: Verdict | None = None
    score: float | None = None
    last_action_error: str | None = None


class State(BaseModel):
    """Episode bookkeeping, returned by GET /state."""

    episode_id: str
    task_name: str
    mode: Mode
    seed: int | None = None
    step_count: int = 0
    max_steps: int
    done: bool = False
    submitted: bool = False
    score: float | None = None
    cumulative_reward: float = 0.0
    verdict: Verdict | None = None
    explanation_score: float | None = None
    actions_taken: list[str] = Field(default_factory=list)
    workspace_hash: str = ""
    infra_errors: int = 0


class StepResult(BaseModel):
    """OpenEnv-shaped reply of reset and step."""

    observation: Observation
    reward: float
    done: bool
    episode_id: str
