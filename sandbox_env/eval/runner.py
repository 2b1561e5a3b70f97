"""The eval scheduler: plans (agent, task, seed) episodes, resumes, retries, runs them on K threads.

Finished episodes of an earlier run into the same directory are skipped, infra and env
errors are retried; the rest run in parallel over one shared sandbox (episode.py plays each
one), and runs.jsonl and summary.json are written at the end, also after Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import os
import platform
import signal
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .. import __version__
from ..rubrics import ExplanationJudge, default_judge
from ..sandbox import Sandbox, make_sandbox, mode_choices
from ..suite.tasks import TaskRegistry
from .episode import EpisodeRunner, now
from .policies import Agent, EvalConfigError, ReplayAgent
from .progress import Emit, make_progress
from .records import EPISODES_FILE, RUNS_FILE, EpisodeKey, EpisodeLog, EpisodeRecord, RunInfo, latest
from .summary import Summary, write_summary

COUNTED = ("ok", "agent_error", "env_error", "infra_error")  # the statuses of EvalResult.statuses


class EvalConfig(BaseModel):
    """One `sandbox-env eval` invocation."""

    model_config = ConfigDict(extra="forbid")
    agent: str = Field(default="oracle", description="the agent spec, as given (recorded in runs.jsonl)")
    tasks: list[str] | None = Field(default=None, description="task ids; None: all (replay: recorded)")
    split: Literal["train", "test", "all"] | None = Field(default=None, description=(
        "play every variant of the selected families in this split (family@N, variants.toml); "
        "None: the tasks as named (a plain id is variant 0)"))
    seeds: list[int] | None = Field(default=None, description="None: [0] (replay: recorded)")
    concurrency: int = Field(default=4, ge=1, le=256)
    force_concurrency: bool = Field(default=False, description="do not cap K by the CPU count (docker)")
    mode: str = Field(default="auto", description="a registered mode safe for untrusted agents, or auto "
                                                  "(sandbox/registry.py)")
    out: Path
    progress: bool | None = Field(default=None, description="live display; None: when stdout is a TTY")
    owner: str | None = Field(default=None, description="container label owner (docker)")
    infra_retries: int = Field(default=1, ge=0, le=10, description="times an episode ending in an infra or "
                         "env error is played again within this invocation (a rerun into the same "
                         "--out retries what is still failed)")

    @field_validator("mode")
    @classmethod
    def _registered_mode(cls, mode: str) -> str:
        choices = mode_choices(untrusted=True)
        if mode not in choices:
            raise ValueError(f"eval mode {mode!r} is not one of {', '.join(choices)}")
        return mode


RETRIED_STATUSES = frozenset({"infra_error", "env_error"})


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
    retried: int = 0
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
        self.episodes = EpisodeRunner(tasks, agent, self.log, judge=self.judge, stop=self.stop, emit=emit)

    # -- planning -------------------------------------------------------------------------
    def plan(self) -> list[EpisodeKey]:
        """Every episode identity of this invocation, interleaved by seed."""
        recorded = self.agent.available() if isinstance(self.agent, ReplayAgent) else None
        ids = self.cfg.tasks or (sorted({t for t, _ in recorded}) if recorded else self.tasks.ids())
        if self.cfg.split is not None:
            ids = self._split_ids(ids, self.cfg.split)
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

    def _split_ids(self, ids: list[str], split: str) -> list[str]:
        """The task ids of every variant in ``split`` of the families ``ids`` name (a task
        without variants is its own train variant 0); variant 0 keeps its plain id."""
        families = {t.partition("@")[0] for t in ids}
        out = [self.tasks.get(a).id for a in self.tasks.variant_ids(split) if a.partition("@")[0] in families]
        if not out:
            raise EvalConfigError(f"no variant of {', '.join(sorted(families))} is in split {split!r}")
        return out

    def _newest(self) -> dict[EpisodeKey, EpisodeRecord]:
        """The newest record of every identity already in the directory (resume)."""
        loaded = self.log.load()
        if loaded.repaired_tail:
            self.emit(f"[eval] {self.log.path}: a truncated last line (interrupted write) was dropped")
        return latest(loaded.records)

    def _concurrency(self, mode: str) -> int:
        k = self.cfg.concurrency
        cap = os.cpu_count() or 1
        if mode == "docker" and k > cap and not self.cfg.force_concurrency:
            self.emit(f"[eval] concurrency capped at {cap} (docker: one CPU per running episode; "
                      "--force-concurrency to override)")
            return cap
        return k

    def _start(self, keys: list[EpisodeKey], todo: list[EpisodeKey],
               newest: dict[EpisodeKey, EpisodeRecord], mode: str) -> int:
        """Prepare the tasks, say what will run (and what was kept), return K."""
        for t in {k.task for k in keys}:
            self.episodes.prepare(self.tasks.get(t), mode)
        kept = [newest[k] for k in keys if k in newest and k not in todo]
        stale = [r for r in kept if r.task_version != self.episodes.versions[r.task]]
        other_mode = [r for r in kept if r.mode != mode]
        retried = sum(1 for k in todo if k in newest)
        k_threads = self._concurrency(mode)
        self.emit(f"[eval] agent={self.agent.label} mode={mode} tasks={len({k.task for k in keys})} "
                  f"episodes={len(keys)}: {len(keys) - len(todo)} already finished (skipped), "
                  f"{len(todo)} to run"
                  + (f" ({retried} retried after infra/env errors)" if retried else "")
                  + f", concurrency {k_threads}, out={self.cfg.out}")
        if stale:
            self.emit(f"[eval] warning: {len(stale)} finished episode(s) were recorded with another "
                      "version of their task; they are kept (use a fresh --out to rerun them)")
        if other_mode:
            self.emit(f"[eval] warning: {len(other_mode)} finished episode(s) were recorded in "
                      "another mode")
        return k_threads

    # -- running --------------------------------------------------------------------------
    def run_one(self, key: EpisodeKey, sandbox: Sandbox) -> EpisodeRecord | None:
        """One episode on a worker thread, counted as running while it plays; raises only Ctrl-C."""
        with self._lock:
            self._running += 1
        try:
            return self.episodes.run(key, sandbox)
        except KeyboardInterrupt:
            self.stop.set()  # at once: episodes queued behind this one must not start playing
            raise
        finally:
            with self._lock:
                self._running -= 1

    def _schedule(self, todo: list[EpisodeKey], sandbox: Sandbox, k_threads: int,
                  counts: Counter[str]) -> bool:
        """Run ``todo`` on K threads, counting statuses into ``counts``; True when interrupted.

        An episode that ends in an infra or env error (never the agent's doing) is submitted
        again, up to ``infra_retries`` times: on a pool of nodes it lands wherever a slot is free.
        Both records stay in the log; the summary counts the newest."""
        progress = make_progress(self.cfg.progress, len(todo), f"eval {self.agent.label}", self.emit)
        attempts: Counter[EpisodeKey] = Counter()
        with _SigtermAsInterrupt(), progress, ThreadPoolExecutor(max_workers=k_threads,
                                                                 thread_name_prefix="eval") as pool:
            pending: dict[Future[EpisodeRecord | None], EpisodeKey] = {
                pool.submit(self.run_one, k, sandbox): k for k in todo}
            try:
                while pending:
                    done, _ = wait(pending, return_when=FIRST_COMPLETED)
                    ctrl_c = False  # an episode raised Ctrl-C: count the others that finished with it first
                    for fut in done:
                        key = pending.pop(fut)
                        try:
                            rec = fut.result()
                        except KeyboardInterrupt:
                            ctrl_c = True
                            continue
                        if rec is None:
                            continue
                        if (rec.status in RETRIED_STATUSES and attempts[key] < self.cfg.infra_retries
                                and not self.stop.is_set()):
                            attempts[key] += 1
                            counts["retried"] += 1
                            pending[pool.submit(self.run_one, key, sandbox)] = key
                            continue
                        counts[rec.status] += 1
                        counts["verified"] += rec.outcome == "verified"
                        counts["replay_mismatch"] += bool(rec.replay and not rec.replay.matches)
                        progress.update(counts, self._running, rec)
                    if ctrl_c:
                        raise KeyboardInterrupt
            except KeyboardInterrupt:
                self.stop.set()  # running episodes end at their next environment call
                for f in pending:
                    f.cancel()
                self.emit("\n[eval] interrupted: finishing the summary; finished episodes are kept, "
                          "rerun with the same --out to resume")
                return True
        if counts["retried"]:
            self.emit(f"[eval] {counts['retried']} episode(s) played again after an infra or env error")
        return False

    def run(self) -> EvalResult:
        cfg = self.cfg
        cfg.out.mkdir(parents=True, exist_ok=True)
        keys = self.plan()
        newest = self._newest()
        todo = [k for k in keys if not (k in newest and newest[k].finished)]
        started, t0 = now(), time.monotonic()
        sandbox = self._sandbox or make_sandbox(cfg.mode, owner=cfg.owner or f"eval-{os.getpid()}-"
                                                f"{uuid.uuid4().hex[:6]}")
        interrupted = False
        counts: Counter[str] = Counter()  # statuses, plus "verified" and "replay_mismatch"
        k_threads = cfg.concurrency
        try:
            k_threads = self._start(keys, todo, newest, sandbox.mode)
            interrupted = self._schedule(todo, sandbox, k_threads, counts)
        finally:
            if self._owns_sandbox:
                sandbox.close()
            self.agent.close()
        ran = sum(counts[s] for s in COUNTED)
        run = RunInfo(started_at=started, finished_at=now(), wall_s=round(time.monotonic() - t0, 3),
                      agent=cfg.agent, label=self.agent.label, mode=sandbox.mode, concurrency=k_threads,
                      concurrency_requested=cfg.concurrency, tasks=sorted({k.task for k in keys}),
                      seeds=sorted({k.seed for k in keys}), planned=len(keys), skipped=len(keys) - len(todo),
                      ran=ran, interrupted=interrupted, host=platform.node(), package_version=__version__)
        with (cfg.out / RUNS_FILE).open("a", encoding="utf-8") as f:
            f.write(run.model_dump_json() + "\n")
        return EvalResult(out=cfg.out, mode=sandbox.mode, concurrency=k_threads, planned=len(keys),
                          skipped=len(keys) - len(todo), ran=ran, statuses={s: counts[s] for s in COUNTED},
                          interrupted=interrupted, replay_mismatches=counts["replay_mismatch"],
                          retried=counts["retried"], summary=write_summary(cfg.out))


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


def run_eval(cfg: EvalConfig, tasks: TaskRegistry, agent: Agent, *, sandbox: Sandbox | None = None,
             judge: ExplanationJudge | None = None, emit: Emit = print) -> EvalResult:
    """Run (or resume) an eval into ``cfg.out``; see EvalRunner."""
    return EvalRunner(cfg, tasks, agent, sandbox=sandbox, judge=judge, emit=emit).run()

