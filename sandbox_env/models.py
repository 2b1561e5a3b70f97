"""Pydantic v2 models for every boundary: actions, observations, state, run results, verdicts."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

# The action vocabulary lives in actions.py (one table); re-exported here for callers.
from .actions import (  # noqa: F401
    ACTION_ADAPTER,
    ACTION_TYPES,
    MAX_COMMAND,
    MAX_PATH,
    MAX_TEXT,
    Action,
    ActionModel,
    EditFile,
    ExecuteBash,
    ReadFile,
    SubmitFix,
    ViewGitDiff,
)


class Outcome(StrEnum):
    """How a run or a verification ended, classified from facts, never guessed."""

    passed = "passed"
    failed = "failed"
    timeout = "timeout"
    oom_killed = "oom_killed"
    infra_error = "infra_error"


# --------------------------------------------------------------------------- execution
class Limits(BaseModel):
    """Resource limits of one run; tasks set them, the sandbox enforces them."""

    model_config = ConfigDict(extra="forbid")
    timeout_s: float = Field(default=120.0, gt=0, le=3600)
    memory_mb: int = Field(default=2048, ge=64)
    data_mb: int | None = Field(default=None, ge=64, description="RLIMIT_DATA, if set")
    cpus: float = Field(default=1.0, gt=0, le=64)
    pids: int = Field(default=512, ge=16, description="processes and threads (docker: the "
                      "container's cap, set when it is created, so always the default)")
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
    refused: bool = Field(default=False, description="the sandbox cannot run this command at all "
                          "(mock mode: it was never recorded); nothing ran and no step is spent")


Provenance = Literal["measured", "recorded", "inferred", "unsure"]


class Verdict(BaseModel):
    """What the hidden checks concluded about a workspace."""

    passed: bool
    outcome: Outcome
    reasons: list[str] = Field(default_factory=list)
    evidence: dict[str, Any] = Field(default_factory=dict)
    duration_s: float = 0.0
    source: str = ""
    provenance: Provenance = Field(default="measured", description=(
        "how the verdict was reached: measured (the checks ran here), recorded (the mock replays "
        "a real run of this exact state), inferred (the mock's classifier matched a recorded "
        "behaviour), unsure (the mock cannot tell: not scored)"))


# --------------------------------------------------------------------------- episode
# The name of a registered sandbox backend (sandbox/registry.py is the one list of them; the
# domain layer does not import the sandbox layer, so the name is a string here).
Mode = Annotated[str, Field(min_length=1, max_length=32, description="the sandbox backend's name, "
                            "as registered in sandbox_env/sandbox/registry.py (mock, docker, ...)")]
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
    family: str = Field(default="", description="the task family (task_repos/<family>)")
    variant: int = Field(default=0, ge=0, description="the family's variant (0: the folder as it is)")
    repo_hash: str = Field(default="", description="exact content hash of the variant's original repo")


class StepResult(BaseModel):
    """OpenEnv-shaped reply of reset and step."""

    observation: Observation
    reward: float
    done: bool
    episode_id: str
