"""What every harness adapter shares: one episode per rollout, the agent's texts, the tool table.

This module has one job: hold a sandbox-env episode for a harness that is not ours (Inspect,
verifiers) so that its agent sees exactly what an HTTP agent sees. The texts given to the model
are the observation's own fields, unchanged: the system prompt is the reset observation's
``instructions``, the first user message its ``task_description`` and ``terminal_output`` (the
workspace listing and the run command) with the status line every tool result ends with
(step, budget, run status); a tool's result is the step's ``terminal_output``, its
``last_action_error``, a new ``hint`` and that status line. No label, verdict internals or check
file is shown; the hidden check's verdict reaches the model only as the agent-facing text of
``submit_fix`` (the same as over HTTP). The tools are derived from the action table
(``actions.ACTIONS``): name, description, JSON schema of the arguments.

An episode runs in this process over a shared sandbox of the mode asked for (``mock``,
``process``, ``docker``, one per mode and process, closed at exit), or on a sandbox-env server
(``url``) over HTTP. ``HarnessEpisode.close`` ends it; the result (terminal score, verdict
outcome and reasons) stays readable after.
"""

from __future__ import annotations

import atexit
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..actions import ACTIONS, ActionModel, tool_input_schema
from ..agent_view import tool_result, tool_status_line
from ..client import TriageClient
from ..environment import LocalEpisode, TriageEnvironment
from ..errors import EnvError, VariantNotCertified
from ..models import Observation
from ..protocol import Episode
from ..suite.tasks import TaskRegistry, default_task_root

MODES = ("mock", "process", "docker")
SPLITS = ("train", "test", "all")

_lock = threading.Lock()
_registries: dict[Path, TaskRegistry] = {}
_sandboxes: dict[str, Any] = {}
_judge: list[Any] = []


def registry(task_root: str | Path | None = None) -> TaskRegistry:
    """One task registry per root and process (it caches files and classifiers)."""
    root = Path(task_root) if task_root else default_task_root()
    with _lock:
        if root not in _registries:
            _registries[root] = TaskRegistry(root)
        return _registries[root]


def task_ids(split: str = "test", tasks: list[str] | str | None = None,
             task_root: str | Path | None = None) -> list[str]:
    """The ``family@variant`` ids of ``split`` (train | test | all), narrowed to ``tasks`` (families
    or ``family@N`` ids; a comma-separated string is accepted). A variant the registry refuses to
    serve (not certified) is left out, as a reset over HTTP would refuse it."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}, not {split!r}")
    reg = registry(task_root)
    ids = reg.variant_ids(split)
    if tasks:
        wanted = [t.strip() for t in (tasks.split(",") if isinstance(tasks, str) else tasks) if t.strip()]
        unknown = [t for t in wanted if not any(i == t or i.split("@")[0] == t for i in ids)]
        if unknown:
            raise ValueError(f"not in split {split}: {', '.join(unknown)} (has: {', '.join(ids)})")
        ids = [i for i in ids if i in wanted or i.split("@")[0] in wanted]
    return [i for i in ids if _servable(reg, i)]


def _servable(reg: TaskRegistry, task_id: str) -> bool:
    try:
        reg.get(task_id)
    except VariantNotCertified:
        return False
    return True


def task_metadata(task_id: str, split: str, task_root: str | Path | None = None) -> dict[str, Any]:
    """What a harness records next to a sample: the task, its family, variant and split."""
    spec = registry(task_root).get(task_id)
    return {"task": spec.address, "family": spec.family, "variant": spec.variant_index, "split": split}


def _shared_sandbox(mode: str) -> Any:
    from ..rubrics import default_judge
    from ..sandbox import make_sandbox

    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    with _lock:
        if mode not in _sandboxes:
            _sandboxes[mode] = make_sandbox(mode, owner=f"harness-{os.getpid()}")
        if not _judge:
            _judge.append(default_judge())
        return _sandboxes[mode], _judge[0]


@atexit.register
def close_sandboxes() -> None:
    """Close every shared sandbox of this process (registered at exit; safe to call twice)."""
    with _lock:
        boxes = list(_sandboxes.values())
        _sandboxes.clear()
    for box in boxes:
        try:
            box.close()
        except Exception:  # exiting: a sandbox that cannot close has nothing left to free
            pass


@dataclass(frozen=True)
class ToolSpec:
    """One action as a tool: name, description, JSON schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]
    model: type[ActionModel]

    def argument_description(self, name: str) -> str:
        return self.model.model_fields[name].description or name


TOOLS: tuple[ToolSpec, ...] = tuple(
    ToolSpec(m.kind(), f"{m.summary()} Returns: {m.result}", tool_input_schema(m), m) for m in ACTIONS)


@dataclass
class EpisodeResult:
    """How a rollout's episode ended, for a harness's scorer or rubric."""

    task: str
    done: bool = False
    submitted: bool = False
    score: float = 0.0  # the terminal score; 0.0 when not submitted and not exhausted, or unsure
    scored: bool = False  # False: never ended, or the mock could not judge (provenance unsure)
    passed: bool | None = None
    outcome: str | None = None  # the verdict's outcome (passed, failed, timeout, ...)
    reasons: list[str] = field(default_factory=list)
    provenance: str | None = None
    steps: int = 0
    ended_by: str = "not_ended"  # submit_fix | budget_exhausted | not_ended

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class HarnessEpisode:
    """One episode for one rollout, in process (``mode``) or on a server (``url``)."""

    def __init__(self, mode: str = "mock", url: str | None = None,
                 task_root: str | Path | None = None) -> None:
        self.mode, self.url, self.task_root = mode, url or None, task_root
        self._episode: Episode | None = None
        self._last_hint: str | None = None
        self.observation: Observation | None = None
        self.result: EpisodeResult | None = None

    # ---------------------------------------------------------------- lifecycle
    def start(self, task: str) -> tuple[str, str]:
        """Reset an episode on ``task`` (``family@N``); the (system, user) texts of its start."""
        if self.url:
            self._episode = TriageClient(self.url)
        else:
            sandbox, judge = _shared_sandbox(self.mode)
            self._episode = LocalEpisode(TriageEnvironment(registry(self.task_root), sandbox, judge))
        obs = self._episode.reset(task=task, compact=True).observation
        self.observation, self._last_hint = obs, None
        self.result = EpisodeResult(task=obs.task_name)
        status = tool_status_line(obs, obs.score)
        user = f"{obs.task_description.strip()}\n\n{obs.terminal_output.strip()}\n{status}"
        return obs.instructions, user

    @property
    def done(self) -> bool:
        return self.result is not None and self.result.done

    def close(self) -> None:
        """End the episode and free what it holds (idempotent); the result stays."""
        episode, self._episode = self._episode, None
        if episode is None:
            return
        try:
            episode.close_episode()
        except (EnvError, OSError):
            pass  # already expired, or the server is gone
        if isinstance(episode, TriageClient):
            episode.close()

    # ---------------------------------------------------------------- tools
    def act(self, kind: str, arguments: dict[str, Any]) -> str:
        """Apply one tool call; the text the model receives (errors as text, as over HTTP)."""
        if self._episode is None or self.result is None:
            return "Error: no episode is running (it was closed or never started)."
        if self.result.done:
            return f"Error: the episode is over. {tool_status_line(self.observation, self.observation.score)}"  # type: ignore[arg-type]
        try:
            obs = self._episode.step({"action_type": kind, **arguments})
        except EnvError as exc:
            return f"Error: {exc}"
        obs = obs.observation
        self.observation = obs
        self._record(obs, kind)
        text, self._last_hint = tool_result(obs, self._last_hint, score=obs.score)
        return text

    def _record(self, obs: Observation, kind: str) -> None:
        res = self.result
        assert res is not None
        res.steps = obs.step_number
        if not obs.done:
            return
        res.done = True
        res.ended_by = "submit_fix" if kind == "submit_fix" else "budget_exhausted"
        res.submitted = kind == "submit_fix"
        if obs.verdict is not None:
            res.passed, res.outcome = obs.verdict.passed, obs.verdict.outcome.value
            res.reasons, res.provenance = list(obs.verdict.reasons), obs.verdict.provenance
        res.scored = obs.score is not None and res.provenance != "unsure"
        res.score = float(obs.score) if res.scored and obs.score is not None else 0.0


__all__ = ["MODES", "SPLITS", "TOOLS", "EpisodeResult", "HarnessEpisode", "ToolSpec", "close_sandboxes",
           "registry", "task_ids", "task_metadata"]
