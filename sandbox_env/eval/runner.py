"""Runs the planned episodes in parallel over one shared sandbox, resumably, with live progress."""

from __future__ import annotations

import os
import platform
import signal
import sys
import threading
import time
import traceback
import uuid
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .. import __version__
from ..environment import FREE_INFRA_ERRORS, TriageEnvironment
from ..rubrics import SCORE_MIN, ExplanationJudge, LLMJudge, clamp_score, default_judge
from ..sandbox import Sandbox, make_sandbox
from ..tasks import TaskRegistry, TaskSpec
from ..traces import Provenance, load_traces
from .policies import Agent, AgentResult, EvalConfigError, ReplayAgent
from .records import (
    EPISODES_FILE,
    RUNS_FILE,
    EpisodeKey,
    EpisodeLog,
    EpisodeRecord,
    RecordProvenance,
    RunInfo,
    Status,
    Timings,
    VerdictRecord,
    latest,
    task_version,
)
from .session import EnvCallError, EpisodeSession
from .summary import Summary, write_summary

EvalMode = Literal["docker", "mock", "auto"]
Emit = Callable[[str], None]


class EvalConfig(BaseModel):
    """One `sandbox-env eval` invocation."""

    model_config = ConfigDict(extra="forbid")
    agent: str = Field(default="oracle", description="the agent spec, as given (recorded in runs.jsonl)")
    tasks: list[str] | None = Field(default=None, description="task ids; None: all (replay: recorded)")
    seeds: list[int] | None = Field(default=None, description="None: [0] (replay: recorded)")
    concurrency: int = Field(default=4, ge=1, le=256)
    force_concurrency: bool = Field(default=False, description="do not cap K by the CPU count (docker)")
    mode: EvalMode = "auto"
    out: Path
    progress: bool | None = Field(default=None, description="live display; None: when stdout is a TTY")
    owner: str | None = Field(default=None, description="container label owner (docker)")


class EvalResult(BaseModel):
    out: Path
    mode: str
    concurrency: int
    planned: int
    skipped: int
    ran: int
    statuses: dict[str, int]
    interrupted: bool
    replay_mismatches: int
    summary: Summary


def parse_seeds(seeds: str | None, episodes: int | None) -> list[int] | None:
    """--seeds "0,1,2" or --episodes N (seeds 0..N-1); None when neither is given."""
    if seeds and episodes is not None:
        raise EvalConfigError("give --seeds or --episodes, not both")
    if episodes is not None:
        if episodes < 1:
            raise EvalConfigError("--episodes must be >= 1")
        return list(range(episodes))
    if not seeds:
        return None
    try:
        out = [int(s) for s in seeds.replace(" ", "").split(",") if s]
    except ValueError:
        raise EvalConfigError(f"--seeds must be comma-separated integers, got {seeds!r}") from None
    if len(set(out)) != len(out):
        raise EvalConfigError(f"--seeds has duplicates: {seeds!r}")
    return out


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def judge_name(judge: ExplanationJudge) -> str:
    return f"llm:{judge.model}" if isinstance(judge, LLMJudge) else type(judge).__name__


# --------------------------------------------------------------------------- progress
class LineProgress:
    """No TTY (or --no-progress): one line per finished episode."""

    def __init__(self, total: int, emit: Emit) -> None:
        self.total, self.emit, self.done = total, emit, 0

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def update(self, counts: Counter[str], running: int, record: EpisodeRecord | None = None) -> None:
        if record is None:
            return
        self.done += 1
        score = "excluded" if record.score is None else f"{record.score:.3f}"
        self.emit(f"[eval] {self.done}/{self.total} {record.agent} {record.task} seed={record.seed} "
                  f"status={record.status} outcome={record.outcome} score={score} steps={record.steps} "
                  f"{record.timings.total_s:.1f}s"
                  + (f" error={record.error[:160]!r}" if record.error else ""))


class RichProgress:
    """A live rich display: done / running / failed / infra and the ETA."""

    def __init__(self, total: int, title: str) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.progress = Progress(
            SpinnerColumn(), TextColumn("[bold]{task.description}"), BarColumn(bar_width=24),
            MofNCompleteColumn(),
            TextColumn("running [cyan]{task.fields[running]}[/] failed [red]{task.fields[failed]}[/] "
                       "infra [yellow]{task.fields[infra]}[/] verified [green]{task.fields[verified]}[/]"),
            TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
            transient=False,
        )
        self.task = self.progress.add_task(title, total=total, running=0, failed=0, infra=0, verified=0)

    def __enter__(self) -> RichProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def update(self, counts: Counter[str], running: int, record: EpisodeRecord | None = None) -> None:
        self.progress.update(self.task, advance=1 if record is not None else 0, running=running,
                             failed=counts["agent_error"] + counts["env_error"], infra=counts["infra_error"],
                             verified=counts["verified"])


def _make_progress(cfg: EvalConfig, total: int, title: str, emit: Emit) -> LineProgress | RichProgress:
    live = sys.stdout.isatty() if cfg.progress is None else cfg.progress
    if live:
        try:
            return RichProgress(total, title)
        except ImportError:
            emit("[eval] rich is not installed (pip install 'sandbox-env[eval]'): plain progress lines")
    return LineProgress(total, emit)


# --------------------------------------------------------------------------- runner
class EvalRunner:
    """Plans (agent, task, seed) episodes, skips finished ones, runs the rest on K threads over
    one sandbox, appends a record per finished episode, and writes summary.json at the end."""

    def __init__(self, cfg: EvalConfig, tasks: TaskRegistry, agent: Agent, *,
                 sandbox: Sandbox | None = None, judge: ExplanationJudge | None = None,
                 emit: Emit = print) -> None:
        self.cfg, self.tasks, self.agent, self.emit = cfg, tasks, agent, emit
        self._sandbox, self._owns_sandbox = sandbox, sandbox is None
        self.judge = judge or default_judge()
        self.stop = threading.Event()
        self._lock = threading.Lock()
        self._running = 0
        self.log = EpisodeLog(cfg.out / EPISODES_FILE)
        self._versions: dict[str, str] = {}
        self._trace_prov: dict[str, list[Provenance]] = {}

    # -- planning -------------------------------------------------------------------------
    def plan(self) -> list[EpisodeKey]:
        """Every episode identity of this invocation, interleaved by seed."""
        recorded = self.agent.available() if isinstance(self.agent, ReplayAgent) else None
        ids = self.cfg.tasks or (sorted({t for t, _ in recorded}) if recorded else self.tasks.ids())
        for t in ids:
            self.tasks.get(t)  # UnknownTask names the available ones
        seeds = self.cfg.seeds
        if seeds is None:
            seeds = sorted({s for t, s in recorded if t in ids}) if recorded else [0]
        keys = [EpisodeKey(agent=self.agent.label, task=t, seed=s) for s in seeds for t in ids]
        if recorded is not None:
            have = set(recorded)
            missing = [k for k in keys if (k.task, k.seed) not in have]
            if missing and (self.cfg.tasks or self.cfg.seeds):
                raise EvalConfigError("replay: no recorded trajectory for "
                                      + ", ".join(f"{k.task} seed={k.seed}" for k in missing[:8]))
            keys = [k for k in keys if (k.task, k.seed) in have]
        return keys

    def _concurrency(self, mode: str) -> int:
        k = self.cfg.concurrency
        cap = os.cpu_count() or 1
        if mode == "docker" and k > cap and not self.cfg.force_concurrency:
            self.emit(f"[eval] concurrency capped at {cap} (docker: one CPU per running episode; "
                      "--force-concurrency to override)")
            return cap
        return k

    # -- provenance -----------------------------------------------------------------------
    def _provenance(self, sandbox: Sandbox, task: TaskSpec) -> RecordProvenance:
        prov = RecordProvenance(package_version=__version__, python=platform.python_version(),
                                host=platform.node(), platform=platform.platform(terse=True),
                                mode=sandbox.mode, judge=judge_name(self.judge))
        if sandbox.mode == "docker" and hasattr(sandbox, "provenance"):
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

    def _prepare_task(self, task: TaskSpec, mode: str) -> None:
        self._versions[task.id] = task_version(task)
        if mode == "mock":
            seen: dict[tuple[Any, ...], Provenance] = {}
            for t in load_traces(task):
                p = t.provenance
                seen.setdefault((p.source, p.image, p.torch, p.python, p.host), p)
            self._trace_prov[task.id] = list(seen.values())

    # -- one episode ----------------------------------------------------------------------
    def run_one(self, key: EpisodeKey, sandbox: Sandbox) -> EpisodeRecord | None:
        """Play one episode and append its record; never raises. None: interrupted (not recorded)."""
        with self._lock:
            self._running += 1
        try:
            return self._run_one(key, sandbox)
        except Exception as exc:  # a bug of the harness itself: still one record, the run goes on
            return self._fallback(key, sandbox, exc)
        finally:
            with self._lock:
                self._running -= 1

    def _fallback(self, key: EpisodeKey, sandbox: Sandbox, exc: Exception) -> EpisodeRecord | None:
        detail = "".join(traceback.format_exception(exc)[-4:])
        try:
            task = self.tasks.get(key.task)
            now = _now()
            record = EpisodeRecord(
                record_id=uuid.uuid4().hex, agent=key.agent, task=key.task, seed=key.seed,
                task_version=self._versions.get(task.id, "?"), difficulty=task.difficulty,
                max_steps=task.max_steps, model=self.agent.model, mode=sandbox.mode, status="env_error",
                outcome="error", provenance=self._provenance(sandbox, task), started_at=now, finished_at=now,
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
        started, t0 = _now(), time.monotonic()
        result, status, error = AgentResult(), "ok", None
        try:
            result = self.agent.play(session, task, key.seed)
        except EnvCallError as exc:
            if exc.kind == "refused":
                status, error = "agent_error", f"the environment refused: {exc.detail}"
        except Exception as exc:  # the agent's own failure: isolated to this episode
            tb = "".join(traceback.format_exception(exc)[-3:])
            status, error = "agent_error", f"{type(exc).__name__}: {exc}\n{tb}"
        total = time.monotonic() - t0
        if session.interrupted:
            env.close()
            return None
        try:
            state = env.state.model_copy(deep=True)
        except Exception:
            state = None
        env.close()
        if result.error and status == "ok":
            status, error = "agent_error", result.error
        last_infra = next((s for s in reversed(session.steps) if s.infra), None)
        if session.env_error is not None:
            status = "infra_error" if session.env_error.kind == "infra" else "env_error"
            error = str(session.env_error)
        elif status == "ok" and state is not None and state.verdict is None and (
                (session.steps and session.steps[-1].action_type == "submit_fix" and session.steps[-1].infra)
                or state.infra_errors > FREE_INFRA_ERRORS):
            status = "infra_error"
            msg = last_infra.observation.last_action_error if last_infra and last_infra.observation else None
            error = f"infrastructure failures prevented a verdict ({state.infra_errors}): {msg or ''}".strip()
        elif status == "ok" and result.stopped:
            error = result.stopped
        record = self._record(key, task=task, sandbox=sandbox, session=session, state=state,
                              status=status, error=error, result=result,  # type: ignore[arg-type]
                              started=started, total=total)
        try:
            record.replay = self.agent.check(record)
        except Exception as exc:
            record.replay = None
            record.error = (record.error or "") + f"\nreplay check failed: {exc}"
        self.log.append(record)
        return record

    def _record(self, key: EpisodeKey, *, task: TaskSpec, sandbox: Sandbox, session: EpisodeSession,
                state: Any, status: Status, error: str | None, result: AgentResult, started: str,
                total: float) -> EpisodeRecord:
        steps = session.steps
        by_action: dict[str, float] = {}
        for s in steps:
            by_action[s.action_type] = round(by_action.get(s.action_type, 0.0) + s.duration_s, 6)
        env_s = session.reset_s + sum(s.duration_s for s in steps)
        timings = Timings(reset_s=round(session.reset_s, 6), env_s=round(env_s, 6), by_action=by_action,
                          verification_s=round(sum(s.duration_s for s in steps
                                                   if s.action_type == "submit_fix"), 6),
                          agent_s=round(max(0.0, total - env_s), 6), total_s=round(total, 6))
        verdict = state.verdict if state is not None else None
        if status == "ok" and verdict is not None and verdict.provenance == "unsure":
            status = "unsure"  # the mock could not tell: counted apart, never scored
        if status in ("infra_error", "unsure"):
            outcome = status
        elif status != "ok":
            outcome = "error"
        elif state is not None and state.submitted and verdict is not None:
            outcome = "verified" if verdict.passed else "rejected"
        elif state is not None and state.done:
            outcome = "budget_exhausted"
        else:
            outcome = "unfinished"
        scored = status in ("ok", "agent_error")
        score = None
        if scored:
            score = clamp_score(state.score) if state is not None and state.done and state.score is not None \
                else SCORE_MIN
        return EpisodeRecord(
            record_id=uuid.uuid4().hex, agent=key.agent, task=key.task, seed=key.seed,
            task_version=self._versions.get(task.id) or task_version(task), difficulty=task.difficulty,
            max_steps=task.max_steps, model=self.agent.model,
            agent_info={**self.agent.describe(), **result.info}, mode=sandbox.mode,
            status=status, outcome=outcome,  # type: ignore[arg-type]
            verdict_outcome=verdict.outcome.value if verdict is not None else None,
            success=bool(scored and verdict is not None and verdict.passed), score=score,
            steps=state.step_count if state is not None else 0,
            infra_errors=state.infra_errors if state is not None else 0,
            explanation_score=state.explanation_score if state is not None else None,
            rewards=[s.reward for s in steps if s.observation is not None],
            cumulative_reward=state.cumulative_reward if state is not None else 0.0,
            verdict=VerdictRecord.of(verdict) if verdict is not None else None,
            initial_observation=session.initial, trajectory=steps, timings=timings,
            provenance=self._provenance(sandbox, task), started_at=started, finished_at=_now(),
            error=error,
        )

    # -- the whole run --------------------------------------------------------------------
    def run(self) -> EvalResult:
        cfg = self.cfg
        cfg.out.mkdir(parents=True, exist_ok=True)
        keys = self.plan()
        loaded = self.log.load()
        if loaded.repaired_tail:
            self.emit(f"[eval] {self.log.path}: a truncated last line (interrupted write) was dropped")
        newest = latest(loaded.records)
        finished = {k for k, r in newest.items() if r.finished}
        todo = [k for k in keys if k not in finished]
        retried = sum(1 for k in todo if k in newest)
        started, t0 = _now(), time.monotonic()
        sandbox = self._sandbox or make_sandbox(cfg.mode, owner=cfg.owner or f"eval-{os.getpid()}-"
                                                f"{uuid.uuid4().hex[:6]}")
        interrupted = False
        counts: Counter[str] = Counter()  # statuses, plus "verified" and "replay_mismatch"
        k_threads = cfg.concurrency
        try:
            mode = sandbox.mode
            for t in {k.task for k in keys}:
                self._prepare_task(self.tasks.get(t), mode)
            stale = [k for k in keys if k in finished and newest[k].task_version != self._versions[k.task]]
            other_mode = [k for k in keys if k in finished and newest[k].mode != mode]
            k_threads = self._concurrency(mode)
            self.emit(f"[eval] agent={self.agent.label} mode={mode} tasks={len({k.task for k in keys})} "
                      f"episodes={len(keys)}: {len(keys) - len(todo)} already finished (skipped), "
                      f"{len(todo)} to run"
                      + (f" ({retried} retried after infra/env errors)" if retried else "")
                      + f", concurrency {k_threads}, out={cfg.out}")
            if stale:
                self.emit(f"[eval] warning: {len(stale)} finished episode(s) were recorded with another "
                          "version of their task; they are kept (use a fresh --out to rerun them)")
            if other_mode:
                self.emit(f"[eval] warning: {len(other_mode)} finished episode(s) were recorded in "
                          "another mode")
            progress = _make_progress(cfg, len(todo), f"eval {self.agent.label}", self.emit)
            with _SigtermAsInterrupt(), progress, ThreadPoolExecutor(max_workers=k_threads,
                                              thread_name_prefix="eval") as pool:
                futures: list[Future[EpisodeRecord | None]] = [
                    pool.submit(self.run_one, k, sandbox) for k in todo]
                try:
                    for fut in as_completed(futures):
                        rec = fut.result()
                        if rec is None:
                            continue
                        counts[rec.status] += 1
                        counts["verified"] += rec.outcome == "verified"
                        counts["replay_mismatch"] += bool(rec.replay and not rec.replay.matches)
                        progress.update(counts, self._running, rec)
                except KeyboardInterrupt:
                    interrupted = True
                    self.stop.set()  # running episodes end at their next environment call
                    for f in futures:
                        f.cancel()
                    self.emit("\n[eval] interrupted: finishing the summary; finished episodes are kept, "
                              "rerun with the same --out to resume")
        finally:
            if self._owns_sandbox:
                sandbox.close()
            self.agent.close()
        ran = sum(counts[s] for s in ("ok", "agent_error", "env_error", "infra_error"))
        run = RunInfo(started_at=started, finished_at=_now(), wall_s=round(time.monotonic() - t0, 3),
                      agent=cfg.agent, label=self.agent.label, mode=sandbox.mode, concurrency=k_threads,
                      concurrency_requested=cfg.concurrency, tasks=sorted({k.task for k in keys}),
                      seeds=sorted({k.seed for k in keys}), planned=len(keys), skipped=len(keys) - len(todo),
                      ran=ran, interrupted=interrupted, host=platform.node(), package_version=__version__)
        with (cfg.out / RUNS_FILE).open("a", encoding="utf-8") as f:
            f.write(run.model_dump_json() + "\n")
        summary = write_summary(cfg.out)
        return EvalResult(out=cfg.out, mode=sandbox.mode, concurrency=k_threads, planned=len(keys),
                          skipped=len(keys) - len(todo), ran=ran,
                          statuses={s: counts[s] for s in ("ok", "agent_error", "env_error", "infra_error")},
                          interrupted=interrupted, replay_mismatches=counts["replay_mismatch"],
                          summary=summary)


class _SigtermAsInterrupt:
    """SIGTERM (a scheduler's preemption) stops the run like Ctrl-C: summary written, resumable."""

    def __enter__(self) -> None:
        self.old: Any = None
        if threading.current_thread() is threading.main_thread():
            self.old = signal.signal(signal.SIGTERM, self._raise)

    @staticmethod
    def _raise(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    def __exit__(self, *exc: object) -> None:
        if self.old is not None:
            signal.signal(signal.SIGTERM, self.old)


def summary_lines(summary: Summary) -> list[str]:
    """A few lines per agent for the terminal."""
    out = []
    for a in summary.agents.values():
        o = a.overall
        rate = "n/a" if o.success.rate is None else (f"{o.success.rate:.1%} [{o.success.lo:.1%}, "
                                                     f"{o.success.hi:.1%}]")
        score = "n/a" if o.score.mean is None else f"{o.score.mean:.3f}" + (
            f" [{o.score.lo:.3f}, {o.score.hi:.3f}]" if o.score.lo is not None else "")
        out.append(f"[summary] {a.label}: episodes={o.n} scored={o.n_scored} success={rate} "
                   f"mean_score={score} infra_excluded={o.n_infra_excluded} "
                   f"env_error_excluded={o.n_env_error_excluded} unsure_excluded={o.n_unsure_excluded} "
                   f"agent_errors={o.n_agent_error}")
        for t, g in a.per_task.items():
            r = "n/a" if g.success.rate is None else f"{g.success.rate:.0%}"
            m = "n/a" if g.score.mean is None else f"{g.score.mean:.3f}"
            out.append(f"[summary]   {t}: success={r} ({g.success.k}/{g.success.n}) mean_score={m} "
                       f"outcomes={g.outcomes}")
        if a.replay:
            out.append(f"[summary]   replay: {a.replay.checked} checked, {a.replay.mismatches} mismatched")
    return out


def run_eval(cfg: EvalConfig, tasks: TaskRegistry, agent: Agent, *, sandbox: Sandbox | None = None,
             judge: ExplanationJudge | None = None, emit: Emit = print) -> EvalResult:
    """Run (or resume) an eval into ``cfg.out``; see EvalRunner."""
    return EvalRunner(cfg, tasks, agent, sandbox=sandbox, judge=judge, emit=emit).run()
