"""One eval episode: play (agent, task, seed) over a sandbox and append its EpisodeRecord."""

from __future__ import annotations

import platform
import threading
import time
import traceback
import uuid
from datetime import UTC, datetime
from importlib import metadata
from typing import Any

from .. import __version__
from ..environment import FREE_INFRA_ERRORS, TriageEnvironment
from ..models import State, Verdict
from ..rubrics import SCORE_MIN, ExplanationJudge, LLMJudge, clamp_score
from ..sandbox import Sandbox
from ..suite.tasks import TaskRegistry, TaskSpec
from ..suite.traces import Provenance, load_traces
from .policies import Agent, AgentResult
from .progress import Emit
from .records import (
    EpisodeKey,
    EpisodeLog,
    EpisodeRecord,
    OutcomeClass,
    RecordProvenance,
    Status,
    Timings,
    VerdictRecord,
    task_version,
)
from .session import EnvCallError, EpisodeSession


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def variant_fields(task: TaskSpec) -> dict[str, Any]:
    """The family, variant, split and repo hash an episode record carries."""
    from ..suite.variants import load_variants_data

    data = load_variants_data(task.base_task.root)
    split = data.split_of(task.variant_index) if data is not None else ""
    return {"family": task.family, "variant": task.variant_index, "split": split, "repo_hash": task.repo_hash}


def judge_name(judge: ExplanationJudge) -> str:
    return f"llm:{judge.model}" if isinstance(judge, LLMJudge) else type(judge).__name__


class EpisodeRunner:
    """Plays single episodes of one agent and appends a record per finished one to ``log``.

    Thread-safe: the scheduler calls ``run`` from K threads over one sandbox. ``stop`` ends
    running episodes at their next environment call (they are then not recorded).
    """

    def __init__(self, tasks: TaskRegistry, agent: Agent, log: EpisodeLog, *, judge: ExplanationJudge,
                 stop: threading.Event, emit: Emit) -> None:
        self.tasks, self.agent, self.log = tasks, agent, log
        self.judge, self.stop, self.emit = judge, stop, emit
        self.versions: dict[str, str] = {}  # task id -> task_version, filled by prepare()
        self._trace_prov: dict[str, list[Provenance]] = {}

    def prepare(self, task: TaskSpec, mode: str) -> None:
        """Once per task before its episodes: its version and (mock) where its traces were made."""
        self.versions[task.id] = task_version(task)
        if mode == "mock":
            seen: dict[tuple[Any, ...], Provenance] = {}
            for t in load_traces(task):
                p = t.provenance
                seen.setdefault((p.source, p.image, p.torch, p.python, p.host), p)
            self._trace_prov[task.id] = list(seen.values())

    def run(self, key: EpisodeKey, sandbox: Sandbox) -> EpisodeRecord | None:
        """Play one episode and append its record; never raises. None: interrupted (not recorded)."""
        try:
            return self._run_one(key, sandbox)
        except Exception as exc:  # a bug of the harness itself: still one record, the run goes on
            return self._fallback(key, sandbox, exc)

    def _fallback(self, key: EpisodeKey, sandbox: Sandbox, exc: Exception) -> EpisodeRecord | None:
        detail = "".join(traceback.format_exception(exc)[-4:])
        try:
            task = self.tasks.get(key.task)
            at = now()
            record = EpisodeRecord(
                record_id=uuid.uuid4().hex, agent=key.agent, task=key.task, seed=key.seed,
                task_version=self.versions.get(task.id, "?"), difficulty=task.difficulty,
                **variant_fields(task),
                max_steps=task.max_steps, model=self.agent.model, mode=sandbox.mode, status="env_error",
                outcome="error", provenance=self._provenance(sandbox, task), started_at=at, finished_at=at,
                error=f"the eval harness failed on this episode: {type(exc).__name__}: {exc}\n{detail}")
            self.log.append(record)
            return record
        except Exception as again:
            self.emit(f"[eval] {key}: could not record the episode ({again!r}) after: {detail}")
            return None

    def _run_one(self, key: EpisodeKey, sandbox: Sandbox) -> EpisodeRecord | None:
        task = self.tasks.get(key.task)
        env = TriageEnvironment(self.tasks, sandbox, judge=self.judge)
        session = EpisodeSession(env, self.stop)
        started, t0 = now(), time.monotonic()
        result, status, error = self._play(session, task, key.seed)
        total = time.monotonic() - t0
        if session.interrupted:
            env.close()
            return None
        try:
            state: State | None = env.state.model_copy(deep=True)
        except Exception:
            state = None
        env.close()
        status, error = _status(status, error, result, session, state)
        record = self._record(key, task=task, sandbox=sandbox, session=session, state=state,
                              status=status, error=error, result=result, started=started, total=total)
        try:
            record.replay = self.agent.check(record)
        except Exception as exc:
            record.replay = None
            record.error = (record.error or "") + f"\nreplay check failed: {exc}"
        self.log.append(record)
        return record

    def _play(self, session: EpisodeSession, task: TaskSpec,
              seed: int) -> tuple[AgentResult, Status, str | None]:
        """The agent plays; its own failures are isolated to this episode as agent_error."""
        try:
            return self.agent.play(session, task, seed), "ok", None
        except EnvCallError as exc:
            if exc.kind == "refused":
                return AgentResult(), "agent_error", f"the environment refused: {exc.detail}"
        except Exception as exc:
            tb = "".join(traceback.format_exception(exc)[-3:])
            return AgentResult(), "agent_error", f"{type(exc).__name__}: {exc}\n{tb}"
        return AgentResult(), "ok", None  # infra/env/interrupted: the session holds the failure

    def _record(self, key: EpisodeKey, *, task: TaskSpec, sandbox: Sandbox, session: EpisodeSession,
                state: State | None, status: Status, error: str | None, result: AgentResult, started: str,
                total: float) -> EpisodeRecord:
        # the whole verdict (evidence, source) for operators; the agent saw its agent view
        verdict = session.env.operator_verdict or (state.verdict if state is not None else None)
        status, outcome = _outcome(status, state, verdict)
        scored = status in ("ok", "agent_error")
        score = None
        if scored:
            score = clamp_score(state.score) if state is not None and state.done and state.score is not None \
                else SCORE_MIN
        return EpisodeRecord(
            record_id=uuid.uuid4().hex, agent=key.agent, task=key.task, seed=key.seed,
            task_version=self.versions.get(task.id) or task_version(task), difficulty=task.difficulty,
            max_steps=task.max_steps, model=self.agent.model, **variant_fields(task),
            agent_info={**self.agent.describe(), **result.info}, mode=sandbox.mode,
            status=status, outcome=outcome,
            verdict_outcome=verdict.outcome.value if verdict is not None else None,
            success=bool(scored and verdict is not None and verdict.passed), score=score,
            steps=state.step_count if state is not None else 0,
            infra_errors=state.infra_errors if state is not None else 0,
            explanation_score=state.explanation_score if state is not None else None,
            rewards=[s.reward for s in session.steps if s.observation is not None],
            cumulative_reward=state.cumulative_reward if state is not None else 0.0,
            verdict=VerdictRecord.of(verdict) if verdict is not None else None,
            initial_observation=session.initial, trajectory=session.steps, timings=_timings(session, total),
            provenance=self._provenance(sandbox, task), started_at=started, finished_at=now(),
            error=error,
        )

    def _provenance(self, sandbox: Sandbox, task: TaskSpec) -> RecordProvenance:
        prov = RecordProvenance(package_version=__version__, python=platform.python_version(),
                                host=platform.node(), platform=platform.platform(terse=True),
                                mode=sandbox.mode, judge=judge_name(self.judge))
        if sandbox.mode == "docker":
            where = sandbox.provenance()
            prov.image, prov.torch = where.get("image"), where.get("torch")
            prov.torch_source = "sandbox image"
        elif sandbox.mode == "mock":
            traces = self._trace_prov.get(task.id, [])
            prov.traces = traces
            torches = {p.torch for p in traces if p.torch}
            if len(torches) == 1:
                prov.torch, prov.torch_source = torches.pop(), "recorded traces"
        elif sandbox.mode == "local":
            try:
                prov.torch, prov.torch_source = metadata.version("torch"), "host"
            except metadata.PackageNotFoundError:
                pass
        return prov


def _status(status: Status, error: str | None, result: AgentResult, session: EpisodeSession,
            state: State | None) -> tuple[Status, str | None]:
    """The episode's status once played: the session's infra/env failure, or infrastructure
    failures that prevented a verdict, override what the agent's run said."""
    if result.error and status == "ok":
        status, error = "agent_error", result.error
    if session.env_error is not None:
        return ("infra_error" if session.env_error.kind == "infra" else "env_error"), str(session.env_error)
    steps = session.steps
    if status == "ok" and state is not None and state.verdict is None and (
            (steps and steps[-1].action_type == "submit_fix" and steps[-1].infra)
            or state.infra_errors > FREE_INFRA_ERRORS):
        last_infra = next((s for s in reversed(steps) if s.infra), None)
        msg = last_infra.observation.last_action_error if last_infra and last_infra.observation else None
        why = f"infrastructure failures prevented a verdict ({state.infra_errors}): {msg or ''}"
        return "infra_error", why.strip()
    if status == "ok" and result.stopped:
        error = result.stopped
    return status, error


def _outcome(status: Status, state: State | None, verdict: Verdict | None) -> tuple[Status, OutcomeClass]:
    """The final status (an unsure verdict is counted apart, never scored) and the outcome class."""
    if status == "ok" and verdict is not None and verdict.provenance == "unsure":
        status = "unsure"
    if status in ("infra_error", "unsure"):
        return status, status  # type: ignore[return-value]
    if status != "ok":
        return status, "error"
    if state is not None and state.submitted and verdict is not None:
        return status, "verified" if verdict.passed else "rejected"
    if state is not None and state.done:
        return status, "budget_exhausted"
    return status, "unfinished"


def _timings(session: EpisodeSession, total: float) -> Timings:
    """Seconds per phase: reset, agent (the rest), environment per action type, verification."""
    steps = session.steps
    by_action: dict[str, float] = {}
    for s in steps:
        by_action[s.action_type] = round(by_action.get(s.action_type, 0.0) + s.duration_s, 6)
    env_s = session.reset_s + sum(s.duration_s for s in steps)
    return Timings(reset_s=round(session.reset_s, 6), env_s=round(env_s, 6), by_action=by_action,
                   verification_s=round(sum(s.duration_s for s in steps if s.action_type == "submit_fix"), 6),
                   agent_s=round(max(0.0, total - env_s), 6), total_s=round(total, 6))
