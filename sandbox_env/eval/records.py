"""The episodes.jsonl record schema and its append-only, crash-tolerant file."""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..models import Observation, Verdict
from ..suite.tasks import TaskSpec
from ..suite.traces import Provenance

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
OUTPUT_CAP = 4000  # characters of terminal output kept per observation (head + tail)
REASON_CAP = 1000  # characters kept per verdict reason
EPISODES_FILE = "episodes.jsonl"
SUMMARY_FILE = "summary.json"
RUNS_FILE = "runs.jsonl"

# unsure: the mock could not tell whether the submitted fix works (verdict provenance "unsure")
Status = Literal["ok", "agent_error", "env_error", "infra_error", "unsure"]
OutcomeClass = Literal["verified", "rejected", "budget_exhausted", "unfinished", "infra_error", "error",
                       "unsure"]
STATUSES: tuple[str, ...] = ("ok", "agent_error", "env_error", "infra_error", "unsure")
OUTCOME_CLASSES: tuple[str, ...] = ("verified", "rejected", "budget_exhausted", "unfinished",
                                    "infra_error", "error", "unsure")
# Finished episodes are skipped on resume; the others are retried (the newer record wins).
FINISHED_STATUSES = frozenset({"ok", "agent_error", "unsure"})
# Not scored: not the agent's doing (infra, env), or a verdict nobody could reach (unsure).
EXCLUDED_STATUSES = frozenset({"infra_error", "env_error", "unsure"})


def cap_text(text: str, limit: int = OUTPUT_CAP) -> str:
    """Head and tail of ``text`` within about ``limit`` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} chars omitted ...]\n{text[-half:]}"


def task_version(task: TaskSpec) -> str:
    """Content hash of the task folder (repo, checks, patches, traces, task.toml)."""
    h = hashlib.sha256()
    for p in sorted(task.root.rglob("*")):
        rel = p.relative_to(task.root)
        if p.is_file() and not {"__pycache__", ".pytest_cache", ".git"}.intersection(rel.parts):
            h.update(rel.as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    return "sha256:" + h.hexdigest()[:16]


class EpisodeKey(BaseModel):
    """The identity of an episode in an eval directory."""

    model_config = ConfigDict(frozen=True)
    agent: str
    task: str
    seed: int

    def __str__(self) -> str:
        return f"{self.agent} {self.task} seed={self.seed}"


class VerdictRecord(BaseModel):
    passed: bool
    outcome: str
    reasons: list[str] = Field(default_factory=list)
    source: str = ""
    duration_s: float = 0.0
    provenance: str = ""
    evidence: dict[str, Any] = Field(default_factory=dict, description="what the checks measured "
                                     "(the episode's final verdict only; never shown to the agent)")

    @classmethod
    def of(cls, v: Verdict) -> VerdictRecord:
        return cls(passed=v.passed, outcome=v.outcome.value,
                   reasons=[cap_text(r, REASON_CAP) for r in v.reasons], source=v.source,
                   duration_s=v.duration_s, provenance=v.provenance, evidence=v.evidence)


class ObservationRecord(BaseModel):
    """An observation as stored: output capped, file contents reduced to names and sizes."""

    terminal_output: str
    output_chars: int = Field(description="length of the full terminal output")
    files: dict[str, int] = Field(default_factory=dict, description="current_files: path -> chars")
    run_status: str
    system_status: str
    step_number: int
    budget_remaining: int
    done: bool
    reward: float
    score: float | None = None
    hint: str | None = None
    last_action_error: str | None = None
    verdict: VerdictRecord | None = None

    @classmethod
    def of(cls, obs: Observation, cap: int = OUTPUT_CAP) -> ObservationRecord:
        return cls(
            terminal_output=cap_text(obs.terminal_output, cap), output_chars=len(obs.terminal_output),
            files={p: len(t) for p, t in obs.current_files.items()}, run_status=obs.run_status,
            system_status=obs.system_status, step_number=obs.step_number,
            budget_remaining=obs.budget_remaining, done=obs.done, reward=obs.reward, score=obs.score,
            hint=obs.hint,
            last_action_error=cap_text(obs.last_action_error, REASON_CAP) if obs.last_action_error else None,
            verdict=VerdictRecord.of(obs.verdict) if obs.verdict else None,
        )


class StepRecord(BaseModel):
    """One action sent to the environment: verbatim (replay needs it) and what came back."""

    index: int = Field(description="1-based position among the actions sent")
    action: dict[str, Any]
    action_type: str
    refused: str | None = Field(default=None, description="why the environment refused it (no step)")
    observation: ObservationRecord | None = None
    reward: float = 0.0
    done: bool = False
    duration_s: float = 0.0
    infra: bool = Field(default=False, description="the step hit an infrastructure failure")


class Timings(BaseModel):
    """Wall-clock seconds per phase; agent_s is everything outside environment calls."""

    reset_s: float = 0.0
    agent_s: float = 0.0
    env_s: float = 0.0
    by_action: dict[str, float] = Field(default_factory=dict, description="env time per action type")
    verification_s: float = Field(default=0.0, description="submit_fix steps (hidden checks + judge)")
    total_s: float = 0.0


class RecordProvenance(BaseModel):
    """Where and with what an episode ran."""

    package_version: str
    python: str
    host: str
    platform: str
    mode: str
    judge: str
    image: str | None = Field(default=None, description="sandbox image id (docker mode)")
    torch: str | None = None
    torch_source: str | None = Field(default=None, description="sandbox image | recorded traces | host")
    traces: list[Provenance] = Field(default_factory=list,
                                     description="mock mode: where the replayed recordings were made")


class ReplayCheck(BaseModel):
    """A replayed trajectory against its recording: same actions must give the same verdicts."""

    source: str
    source_record_id: str
    matches: bool
    differences: list[str] = Field(default_factory=list)


class EpisodeRecord(BaseModel):
    """One line of episodes.jsonl."""

    schema_version: int = SCHEMA_VERSION
    record_id: str
    agent: str
    task: str
    seed: int
    task_version: str
    family: str = Field(default="", description="the task family (task_repos/<family>)")
    variant: int = Field(default=0, ge=0, description="the family's variant (0: the folder as it is)")
    split: str = Field(default="", description="the variant's split: train | test ('' for a task "
                       "without variants)")
    repo_hash: str = Field(default="", description="exact content hash of the variant's original repo")
    difficulty: str
    max_steps: int
    model: str | None = None
    agent_info: dict[str, Any] = Field(default_factory=dict)
    mode: str
    status: Status
    outcome: OutcomeClass
    verdict_outcome: str | None = Field(default=None, description="the verdict's Outcome, if any")
    success: bool = False
    score: float | None = Field(default=None, description="None when excluded (infra/env error)")
    steps: int = 0
    infra_errors: int = 0
    explanation_score: float | None = None
    rewards: list[float] = Field(default_factory=list)
    cumulative_reward: float = 0.0
    verdict: VerdictRecord | None = None
    initial_observation: ObservationRecord | None = None
    trajectory: list[StepRecord] = Field(default_factory=list)
    timings: Timings = Field(default_factory=Timings)
    provenance: RecordProvenance
    started_at: str
    finished_at: str
    error: str | None = None
    replay: ReplayCheck | None = None

    @property
    def key(self) -> EpisodeKey:
        return EpisodeKey(agent=self.agent, task=self.task, seed=self.seed)

    @property
    def finished(self) -> bool:
        return self.status in FINISHED_STATUSES

    @property
    def scored(self) -> bool:
        return self.status not in EXCLUDED_STATUSES


class LoadResult(BaseModel):
    records: list[EpisodeRecord] = Field(default_factory=list)
    repaired_tail: bool = Field(default=False, description="a truncated last line was dropped")
    bad_lines: list[int] = Field(default_factory=list, description="unreadable lines (1-based) kept")


def read_records(path: Path, repair: bool = False) -> LoadResult:
    """Every readable record of ``path``. A truncated or unreadable last line (a crash while
    writing) is dropped and, with ``repair``, cut from the file; unreadable lines elsewhere are
    skipped, reported and left in place."""
    res = LoadResult()
    if not path.exists():
        return res
    data = path.read_bytes()
    lines = data.split(b"\n")
    offset, good_end = 0, 0
    for i, raw in enumerate(lines, 1):
        last = i == len(lines)
        end = offset + len(raw) + (0 if last else 1)
        if raw.strip():
            try:
                res.records.append(EpisodeRecord.model_validate_json(raw))
                good_end = end
            except (ValidationError, ValueError):
                is_tail = all(not ln.strip() for ln in lines[i:])
                if is_tail:
                    res.repaired_tail = True
                else:
                    res.bad_lines.append(i)
                    good_end = end
        elif not last:
            good_end = end
        offset = end
    if res.bad_lines:
        log.warning("%s: unreadable line(s) %s skipped", path, res.bad_lines)
    if repair and (res.repaired_tail or (data and not data.endswith(b"\n"))):
        with path.open("r+b") as f:  # cut the partial line; appends start on a fresh line
            f.truncate(good_end)
            if good_end and not data[:good_end].endswith(b"\n"):
                f.seek(good_end)
                f.write(b"\n")
    return res


def latest(records: list[EpisodeRecord]) -> dict[EpisodeKey, EpisodeRecord]:
    """The newest record of each episode identity (a retried episode supersedes its attempts)."""
    out: dict[EpisodeKey, EpisodeRecord] = {}
    for r in records:
        out[r.key] = r
    return out


class EpisodeLog:
    """Appends records to episodes.jsonl, one flushed and fsynced line each, thread-safe."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def load(self) -> LoadResult:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        return read_records(self.path, repair=True)

    def append(self, record: EpisodeRecord) -> None:
        line = record.model_dump_json() + "\n"
        with self._lock, self.path.open("a", encoding="utf-8") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())


class RunInfo(BaseModel):
    """One invocation of `sandbox-env eval` on a directory (a line of runs.jsonl)."""

    started_at: str
    finished_at: str
    wall_s: float
    agent: str
    label: str
    mode: str
    concurrency: int
    concurrency_requested: int
    tasks: list[str]
    seeds: list[int]
    planned: int
    skipped: int
    ran: int
    interrupted: bool = False
    host: str
    package_version: str


def read_runs(path: Path) -> list[RunInfo]:
    if not path.exists():
        return []
    runs = []
    for line in path.read_text().splitlines():
        try:
            runs.append(RunInfo.model_validate_json(line))
        except (ValidationError, ValueError):
            continue
    return runs
