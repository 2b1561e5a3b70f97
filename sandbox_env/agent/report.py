"""What the agent reports: the result of an episode and of a run, the [START]/[STEP]/[END] lines on
stdout, and diagnostics on stderr."""

from __future__ import annotations

import sys
from collections.abc import Callable

from pydantic import BaseModel, Field, computed_field

from ..actions import EditFile, ExecuteBash, ReadFile, ViewGitDiff
from ..rubrics import SCORE_MIN
from .replies import AnyAction
from .text import one_line

BENCHMARK = "sandbox-env"

Emit = Callable[[str], None]


class EpisodeResult(BaseModel):
    """One episode as the agent played it; `score` is clamped to [0.001, 0.999]."""

    task: str
    model: str
    episode_id: str | None = None
    success: bool = False
    score: float = SCORE_MIN
    done: bool = False
    steps: int = Field(default=0, description="turns logged as [STEP] lines")
    env_steps: int = Field(default=0, description="actions the environment executed")
    failed_turns: int = Field(default=0, description="turns whose reply was unusable (no env step)")
    llm_calls: int = 0
    rewards: list[float] = Field(default_factory=list)
    actions: list[str] = Field(default_factory=list)
    error: str | None = None
    duration_s: float = 0.0


class RunSummary(BaseModel):
    """All episodes of one run."""

    model: str
    env_url: str
    episodes: list[EpisodeResult] = Field(default_factory=list)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def mean_score(self) -> float:
        return round(sum(e.score for e in self.episodes) / len(self.episodes), 4) if self.episodes else 0.0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def verified(self) -> int:
        return sum(e.success for e in self.episodes)


def action_label(action: AnyAction) -> str:
    """A compact one-line label: read_file(train.py), execute_bash(python train.py), ..."""
    if isinstance(action, ReadFile | EditFile):
        arg = action.filename
    elif isinstance(action, ExecuteBash):
        arg = one_line(action.command, 60)
    elif isinstance(action, ViewGitDiff):
        arg = action.filename or ""
    else:
        arg = f"{len(action.explanation)} chars"
    return f"{action.action_type}({one_line(arg, 80)})"


def _b(v: bool) -> str:
    return "true" if v else "false"


def start_line(task: str, model: str) -> str:
    return f"[START] task={task} env={BENCHMARK} model={model}"


def step_line(n: int, action: str, reward: float, done: bool, error: str | None) -> str:
    err = one_line(error, 200) if error else "null"
    return f"[STEP] step={n} action={action} reward={reward:.2f} done={_b(done)} error={err}"


def end_line(success: bool, steps: int, score: float, rewards: list[float]) -> str:
    return (f"[END] success={_b(success)} steps={steps} score={score:.3f} "
            f"rewards={','.join(f'{r:.2f}' for r in rewards)}")


def summary_lines(summary: RunSummary) -> list[str]:
    """The run's [summary] lines for stderr: totals, then one line per episode."""
    n = len(summary.episodes)
    lines = [f"[summary] model={summary.model} tasks={n} "
             f"verified={summary.verified}/{n} mean_score={summary.mean_score:.3f}"]
    lines += [f"[summary]   {e.task}: score={e.score:.3f} success={_b(e.success)} steps={e.steps}"
              + (f" error={e.error}" if e.error else "") for e in summary.episodes]
    return lines


def emit_stdout(line: str) -> None:
    """The default Emit: one protocol line on stdout, flushed."""
    print(line, flush=True)


def note(msg: str) -> None:
    """A diagnostic on stderr (stdout carries only the protocol lines)."""
    print(msg, file=sys.stderr, flush=True)


class TurnLog:
    """Bookkeeping of an episode's turns and its [STEP] lines."""

    def __init__(self, res: EpisodeResult, emit: Emit) -> None:
        self.res, self.emit = res, emit

    def turn(self, label: str, reward: float, done: bool, error: str | None, env_step: bool) -> None:
        r = self.res
        r.steps += 1
        r.env_steps += env_step
        r.rewards.append(reward)
        r.actions.append(label)
        self.emit(step_line(r.steps, label, reward, done, error))
