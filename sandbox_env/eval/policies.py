"""The eval's policies (oracle, random, llm = the baseline agent, replay) behind one Agent protocol."""

from __future__ import annotations

import random
import re
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, Field

from ..environment import FREE_INFRA_ERRORS
from ..models import Observation
from ..suite.oracle import oracle_actions
from ..suite.tasks import TaskSpec
from .records import EPISODES_FILE, EpisodeRecord, ReplayCheck, latest, read_records
from .session import EnvCallError, EpisodeSession

if TYPE_CHECKING:
    from openai import OpenAI

    from ..agent import AgentConfig

SCORE_TOLERANCE = 1e-6


class EvalConfigError(ValueError):
    """The eval cannot start as configured (unknown agent, missing replay data, no API key)."""


class AgentError(RuntimeError):
    """The agent itself failed (not the environment): the record's status is agent_error."""


class AgentResult(BaseModel):
    """What an agent reports about one episode besides the environment's own state."""

    info: dict[str, Any] = Field(default_factory=dict, description="agent-specific facts, recorded")
    stopped: str | None = Field(default=None, description="why it stopped before the episode ended")
    error: str | None = Field(default=None, description="an agent failure it caught itself")


class Policy(Protocol):
    """A per-episode policy: the next action (a dict) for an observation, or None to stop.

    ``refused`` holds the environment's message when the previous action was refused.
    """

    def act(self, obs: Observation, refused: str | None) -> dict[str, Any] | None: ...


class Agent(ABC):
    """Plays one episode over an EpisodeSession (the TriageClient surface, in process)."""

    label: str = "agent"
    model: str | None = None

    def describe(self) -> dict[str, Any]:
        """Configuration worth recording with every episode."""
        return {}

    @abstractmethod
    def play(self, session: EpisodeSession, task: TaskSpec, seed: int) -> AgentResult: ...

    def check(self, record: EpisodeRecord) -> ReplayCheck | None:
        """A post-hoc check of the finished record (replay compares with its recording)."""
        return None

    def close(self) -> None:
        return None


class StepAgent(Agent):
    """An agent given as a Policy: the runner's loop sends its actions until done or None."""

    max_refusals: int | None = 3  # refused actions in a row that end the episode (None: no limit)

    @abstractmethod
    def policy(self, task: TaskSpec, seed: int) -> Policy: ...

    def action_limit(self, task: TaskSpec) -> int:
        return task.max_steps + FREE_INFRA_ERRORS + (self.max_refusals or 0)

    def play(self, session: EpisodeSession, task: TaskSpec, seed: int) -> AgentResult:
        # the address pins the variant: the eval's seed is the agent's, not a variant choice
        obs = session.reset(task=task.address, seed=seed, compact=True).observation
        pol = self.policy(task, seed)
        refused: str | None = None
        in_a_row = sent = 0
        limit = self.action_limit(task)
        while not obs.done:
            if sent >= limit:
                return AgentResult(stopped=f"action limit {limit} reached")
            action = pol.act(obs, refused)
            if action is None:
                return AgentResult(stopped="the agent had no further action")
            sent += 1
            try:
                obs = session.step(action).observation
                refused, in_a_row = None, 0
            except EnvCallError as exc:
                if exc.kind != "refused":
                    raise
                refused, in_a_row = exc.detail, in_a_row + 1
                if self.max_refusals is not None and in_a_row >= self.max_refusals:
                    return AgentResult(stopped=f"{in_a_row} refused actions in a row")
        return AgentResult()


class _Script:
    """A fixed list of actions, played in order."""

    def __init__(self, actions: list[dict[str, Any]]) -> None:
        self._it: Iterator[dict[str, Any]] = iter(actions)

    def act(self, obs: Observation, refused: str | None) -> dict[str, Any] | None:
        return next(self._it, None)


# --------------------------------------------------------------------------- oracle
class OracleAgent(StepAgent):
    """Reproduces, reads, applies the reference fix, reruns, submits the reference explanation."""

    label = "oracle"

    def policy(self, task: TaskSpec, seed: int) -> Policy:
        return _Script(oracle_actions(task))


# --------------------------------------------------------------------------- random
_WORDS = ("the loss the model training step gradient memory rank process tensor batch graph "
          "value file config loop error runs because fix after before each epoch data loader "
          "backward forward optimizer result").split()


class RandomPolicy:
    """Valid random actions from a seeded RNG: reads of real files, edits of real lines, runs of
    the run command or `ls`, diffs, and a submit with probability ``p_submit`` (or at the end)."""

    WEIGHTS: Mapping[str, float] = {"read_file": 0.3, "edit_file": 0.25, "execute_bash": 0.2,
                                    "view_git_diff": 0.15}

    def __init__(self, task: TaskSpec, seed: int, p_submit: float = 0.1) -> None:
        self.rng = random.Random(f"random-agent:{task.id}:{seed}")
        self.run_command = task.run_command
        self.p_submit = p_submit
        self.files: dict[str, str] = {}

    def _text(self, n: int) -> str:
        return " ".join(self.rng.choice(_WORDS) for _ in range(n))

    def _edit(self) -> dict[str, Any] | None:
        candidates = []
        for path, text in self.files.items():
            lines = [ln for ln in text.splitlines() if ln.strip() and text.count(ln) == 1]
            if lines:
                candidates.append((path, lines))
        if not candidates:
            return None
        path, lines = self.rng.choice(candidates)
        old = self.rng.choice(lines)
        indent = old[: len(old) - len(old.lstrip())]
        ident = "_".join(self.rng.choice(_WORDS) for _ in range(2))
        new = self.rng.choice([
            f"{indent}pass",
            f"{indent}{ident} = {self.rng.randint(0, 999)}",
            f"{old}  # {self._text(3)}",
            re.sub(r"\b\d+\b", str(self.rng.randint(0, 99)), old, count=1),
            "",
        ])
        if new == old:
            new = f"{indent}pass"
        return {"action_type": "edit_file", "filename": path, "old_str": old, "new_str": new}

    def act(self, obs: Observation, refused: str | None) -> dict[str, Any] | None:
        self.files.update(obs.current_files)
        files = obs.files or sorted(self.files)
        if obs.budget_remaining <= 1 or self.rng.random() < self.p_submit:
            sentences = [self._text(self.rng.randint(6, 12)).capitalize() + "." for _ in range(2)]
            return {"action_type": "submit_fix", "explanation": " ".join(sentences)}
        kind = self.rng.choices(list(self.WEIGHTS), weights=list(self.WEIGHTS.values()))[0]
        if kind == "edit_file":
            edit = self._edit()
            if edit is not None:
                return edit
            kind = "read_file"
        if kind == "read_file" and files:
            return {"action_type": "read_file", "filename": self.rng.choice(files)}
        if kind == "view_git_diff":
            return {"action_type": "view_git_diff",
                    "filename": self.rng.choice([None, *files]) if files else None}
        return {"action_type": "execute_bash", "command": self.rng.choice([self.run_command, "ls"])}


class RandomAgent(StepAgent):
    label = "random"

    def __init__(self, p_submit: float = 0.1) -> None:
        self.p_submit = p_submit

    def describe(self) -> dict[str, Any]:
        return {"p_submit": self.p_submit, "weights": dict(RandomPolicy.WEIGHTS)}

    def policy(self, task: TaskSpec, seed: int) -> Policy:
        return RandomPolicy(task, seed, self.p_submit)


# --------------------------------------------------------------------------- llm
_STOPS = ("unusable replies in a row", "turn limit")


class LLMAgent(Agent):
    """The baseline agent (sandbox_env.agent.run_episode), driving the in-process environment
    through EpisodeSession, which offers TriageClient's reset/step/state/close_episode."""

    def __init__(self, cfg: AgentConfig, llm: OpenAI | None = None, label: str | None = None) -> None:
        from ..agent import make_llm_client

        self.cfg = cfg
        self.llm = llm or make_llm_client(cfg)
        self.model = cfg.model
        self.label = label or f"llm:{cfg.model}"

    def describe(self) -> dict[str, Any]:
        return {"api_base_url": self.cfg.api_base_url, "temperature": self.cfg.temperature,
                "max_tokens": self.cfg.max_tokens, "history_window": self.cfg.history_window}

    def play(self, session: EpisodeSession, task: TaskSpec, seed: int) -> AgentResult:
        from ..agent import run_episode

        cfg = self.cfg.model_copy(update={"seed": seed})
        lines: list[str] = []
        res = run_episode(session, self.llm, task.address, cfg, emit=lines.append,  # type: ignore[arg-type]
                          run_command=task.run_command, close=True)
        info = {"turns": res.steps, "env_steps": res.env_steps, "failed_turns": res.failed_turns,
                "llm_calls": res.llm_calls, "turn_actions": res.actions}
        if res.error is None:
            return AgentResult(info=info)
        if any(s in res.error for s in _STOPS) or res.error.startswith("environment error"):
            return AgentResult(info=info, stopped=res.error)
        return AgentResult(info=info, error=res.error)  # the model API failed for good


# --------------------------------------------------------------------------- replay
class ReplayAgent(StepAgent):
    """Re-sends the actions recorded in an episodes.jsonl (per task and seed) and checks that
    the environment answers as it did then: a regression test of the environment itself."""

    max_refusals = None  # refused actions are part of the recording

    def __init__(self, source: Path, source_agent: str | None = None, label: str | None = None) -> None:
        path = source / EPISODES_FILE if source.is_dir() else source
        if not path.exists():
            raise EvalConfigError(f"replay: {path} does not exist")
        ok = [r for r in latest(read_records(path).records).values() if r.status == "ok"]
        if source_agent:
            ok = [r for r in ok if r.agent == source_agent]
        agents = sorted({r.agent for r in ok})
        if not agents:
            raise EvalConfigError(f"replay: {path} holds no finished (status ok) episode"
                                  + (f" of agent {source_agent!r}" if source_agent else ""))
        if len(agents) > 1:
            raise EvalConfigError(f"replay: {path} holds several agents ({', '.join(agents)}); "
                                  "pick one with --replay-agent")
        self.source = str(path)
        self.source_agent = agents[0]
        self.recorded = {(r.task, r.seed): r for r in ok}
        self.label = label or f"replay:{self.source_agent}"
        models = {r.model for r in ok}
        self.model = models.pop() if len(models) == 1 else None

    def describe(self) -> dict[str, Any]:
        return {"source": self.source, "source_agent": self.source_agent}

    def available(self) -> list[tuple[str, int]]:
        return sorted(self.recorded)

    def action_limit(self, task: TaskSpec) -> int:
        return 10**6  # the recording decides

    def policy(self, task: TaskSpec, seed: int) -> Policy:
        rec = self.recorded.get((task.id, seed))
        if rec is None:
            raise AgentError(f"no recorded trajectory of {task.id} seed {seed} in {self.source}")
        return _Script([s.action for s in rec.trajectory])

    def check(self, record: EpisodeRecord) -> ReplayCheck | None:
        src = self.recorded.get((record.task, record.seed))
        if src is None:
            return None
        return compare_replay(src, record, self.source)


def compare_replay(src: EpisodeRecord, new: EpisodeRecord, source: str) -> ReplayCheck:
    """Same actions, same answers: refusals, rewards, statuses, verdicts, final score."""
    diffs: list[str] = []
    if len(src.trajectory) != len(new.trajectory):
        diffs.append(f"{len(new.trajectory)} actions sent, {len(src.trajectory)} recorded")
    for a, b in zip(src.trajectory, new.trajectory, strict=False):
        where = f"action {a.index} ({a.action_type})"
        if (a.refused is None) != (b.refused is None):
            diffs.append(f"{where}: refused {b.refused is not None}, recorded {a.refused is not None}")
            continue
        if a.observation is None or b.observation is None:
            continue
        if abs(a.reward - b.reward) > SCORE_TOLERANCE:
            diffs.append(f"{where}: reward {b.reward:+.4f}, recorded {a.reward:+.4f}")
        for f in ("done", "system_status", "run_status", "step_number"):
            va, vb = getattr(a.observation, f), getattr(b.observation, f)
            if va != vb:
                diffs.append(f"{where}: {f} {vb!r}, recorded {va!r}")
        va_v, vb_v = a.observation.verdict, b.observation.verdict
        if (va_v is None) != (vb_v is None) or (va_v and vb_v and (va_v.passed, va_v.outcome)
                                                  != (vb_v.passed, vb_v.outcome)):
            diffs.append(f"{where}: verdict {vb_v.outcome if vb_v else None}, "
                         f"recorded {va_v.outcome if va_v else None}")
    for f in ("status", "outcome", "verdict_outcome", "success", "steps"):
        if getattr(src, f) != getattr(new, f):
            diffs.append(f"{f}: {getattr(new, f)!r}, recorded {getattr(src, f)!r}")
    if (src.score is None) != (new.score is None) or (
            src.score is not None and new.score is not None and abs(src.score - new.score) > SCORE_TOLERANCE):
        diffs.append(f"score: {new.score}, recorded {src.score}")
    if src.task_version != new.task_version and diffs:
        diffs.append(f"note: the task changed since the recording ({src.task_version} -> {new.task_version})")
    return ReplayCheck(source=source, source_record_id=src.record_id, matches=not diffs, differences=diffs)


# --------------------------------------------------------------------------- factory
AGENT_SPECS = ("oracle", "random", "llm", "replay:FILE")


def make_agent(spec: str, *, label: str | None = None, llm_overrides: Mapping[str, Any] | None = None,
               replay_agent: str | None = None, environ: Mapping[str, str] | None = None) -> Agent:
    """oracle | random | llm | replay:FILE -> an Agent (``label`` renames it in the records)."""
    agent: Agent
    if spec == "oracle":
        agent = OracleAgent()
    elif spec == "random":
        agent = RandomAgent()
    elif spec == "llm":
        from ..agent import AgentConfig, AgentConfigError

        try:
            cfg = AgentConfig.from_env(environ, **dict(llm_overrides or {}))
            cfg.require_key()
            agent = LLMAgent(cfg)
        except AgentConfigError as exc:
            raise EvalConfigError(str(exc)) from None
    elif spec.startswith("replay:") and spec != "replay:":
        agent = ReplayAgent(Path(spec.removeprefix("replay:")), source_agent=replay_agent)
    else:
        raise EvalConfigError(f"unknown agent {spec!r}; choose from {', '.join(AGENT_SPECS)}")
    if label:
        agent.label = label
    return agent
