"""Recorded real runs: the trace file format, loading, and recording them with a real sandbox.

One JSON file per recorded workspace state (the original repo, the reference fix, each
labelled patch) under task_repos/<id>/traces/. Mock mode replays them.
"""

from __future__ import annotations

import json
import platform
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from ..models import RunResult, Verdict
from ..workspace import Workspace, content_hash
from .tasks import TaskSpec, check_files, files_digest

_VOLATILE = [  # what legitimately differs between two recordings of the same state
    (re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d([.,]\d+)?"), "<time>"),
    (re.compile(r"\b\d+(\.\d+)?\s?(s|ms|sec|seconds)\b"), "<dur>"),
    (re.compile(r"\b(pid|PID)[= :]*\d+|\bprocess \d+\b|\bProcess \d+\b"), "<pid>"),
    (re.compile(r"127\.0\.0\.1:\d+|port[= ]\d{4,5}\b"), "<addr>"),
    (re.compile(r"/tmp/[A-Za-z0-9_.-]+"), "/tmp/<tmp>"),
    (re.compile(r"\b0x[0-9a-f]{6,}\b"), "<addr>"),
]


class Provenance(BaseModel):
    source: str  # "docker" or "local"
    image: str | None = None
    torch: str | None = None
    python: str = Field(default_factory=platform.python_version)
    host: str = Field(default_factory=platform.node)
    recorded_at: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    check: str | None = None  # check_digest of the check that gave the verdict (None: before digests)
    verified_at: str | None = None  # set when only the verdict was taken again (reverify_task)
    verify_image: str | None = None  # the image of that later verification


class Trace(BaseModel):
    """Real outputs of one workspace state: the commands run in it and its verdict."""

    task: str
    state: str  # "original", "solution" or "patch:<file>"
    behaviour: str
    workspace_hash: str
    provenance: Provenance
    runs: list[RunResult]
    verdict: Verdict

    def run_for(self, command: str) -> RunResult | None:
        return next((r for r in self.runs if r.command == command), None)

    @property
    def file_name(self) -> str:
        return re.sub(r"[^A-Za-z0-9_.-]+", "_", self.state) + ".json"


def task_states(task: TaskSpec) -> list[tuple[str, str, dict[str, str]]]:
    """Every labelled workspace state of a task: (state name, behaviour, files)."""
    base = task.repo_files()
    states = [("original", "bug", base)]
    sol = Workspace(base)
    sol.apply_patch(task.solution_patch)
    states.append(("solution", "fixed", sol.files))
    for p in task.patches:
        ws = Workspace(base)
        ws.apply_patch(task.patch_text(p))
        states.append((f"patch:{p.file}", p.behaviour, ws.files))
    return states


def load_traces(task: TaskSpec) -> list[Trace]:
    """The task's recordings; a variant's only while they are of its current bytes (a variant
    re-drawn since has none until recorded again)."""
    if not task.traces_dir.is_dir():
        return []
    traces = [Trace.model_validate_json(p.read_text()) for p in sorted(task.traces_dir.glob("*.json"))]
    if task.variant is not None:
        original = next((t for t in traces if t.state == "original"), None)
        if original is None or original.workspace_hash != content_hash(task.repo_files()):
            return []
    return traces


def behaviour_states(task: TaskSpec) -> set[str]:
    """One labelled state per behaviour (the original and the reference fix, then the first
    labelled patch of each other behaviour): what a variant records so that the mock replays
    the variant's own run of whatever behaviour its classifier names."""
    seen: dict[str, str] = {}
    for state, behaviour, _ in task_states(task):
        seen.setdefault(behaviour, state)
    return set(seen.values())


def check_digest(task: TaskSpec) -> str:
    """What a verdict depends on besides the workspace: every file a verification of ``task``
    is given (its checks, the kit, verify.json, the reference fix), hashed."""
    return files_digest(check_files(task))


def stale_states(task: TaskSpec) -> set[str]:
    """The labelled states whose trace is missing, of other files, or judged by another check
    than the task's current one (recorded before a check or the kit changed)."""
    digest = check_digest(task)
    return missing_states(task) | {t.state for t in load_traces(task) if t.provenance.check != digest}


def missing_states(task: TaskSpec) -> set[str]:
    """The labelled states with no trace of their current files (new patches, edited ones)."""
    have = {t.state: t.workspace_hash for t in load_traces(task)}
    return {state for state, _, files in task_states(task) if have.get(state) != content_hash(files)}


def record_task(task: TaskSpec, sandbox: Any, provenance: Provenance, *,
                commands: list[str] | None = None, log: Any = print,
                out_dir: Path | None = None, only: set[str] | None = None) -> list[Trace]:
    """Run every labelled state of ``task`` in a real sandbox and write its trace files.

    ``only`` restricts the recording to those states (e.g. ``{"patch:x.patch"}``).
    """
    commands = commands or [task.run_command]
    provenance = provenance.model_copy(update={"check": check_digest(task)})
    out_dir = out_dir or task.traces_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    traces = []
    for state, behaviour, files in task_states(task):
        if only is not None and state not in only:
            continue
        runs = []
        for cmd in commands:
            ws = Workspace(files)
            res = sandbox.run(ws, cmd, task.limits, task)
            res.changed_files = {}
            runs.append(res)
        verdict = sandbox.verify(Workspace(files), task)
        trace = Trace(task=task.id, state=state, behaviour=behaviour,
                      workspace_hash=content_hash(files), provenance=provenance,
                      runs=runs, verdict=verdict)
        (out_dir / trace.file_name).write_text(
            json.dumps(trace.model_dump(mode="json"), indent=1, sort_keys=True) + "\n")
        log(f"{task.id:28s} {state:40s} run={runs[0].outcome.value:10s} "
            f"verdict={verdict.outcome.value:11s} ({verdict.duration_s:.1f}s)")
        traces.append(trace)
    return traces


def reverify_task(task: TaskSpec, sandbox: Any, provenance: Provenance, *,
                  log: Any = print) -> list[tuple[Trace, Trace]]:
    """Verify again, in a real sandbox, each recorded state of ``task`` judged by an older check
    than the current one, and rewrite its trace with the new verdict and check digest.

    A state's runs do not depend on the check files, so they are kept; only states recorded of
    their current files, by the same backend and torch, qualify (the others need ``record``).
    Returns (old, new) pairs, for ``trace_differences``.
    """
    digest = check_digest(task)
    current = {state: content_hash(files) for state, _, files in task_states(task)}
    files_of = {state: files for state, _, files in task_states(task)}
    pairs = []
    for old in load_traces(task):
        if old.provenance.check == digest:
            continue
        if current.get(old.state) != old.workspace_hash or (old.provenance.source, old.provenance.torch) \
                != (provenance.source, provenance.torch):
            log(f"{task.id:28s} {old.state:40s} skipped: recorded of other files or by another "
                f"backend; record it again")
            continue
        verdict = sandbox.verify(Workspace(files_of[old.state]), task)
        now = datetime.now(UTC).isoformat(timespec="seconds")
        new = old.model_copy(update={"verdict": verdict, "provenance": old.provenance.model_copy(
            update={"check": digest, "verified_at": now, "verify_image": provenance.image})})
        (task.traces_dir / new.file_name).write_text(
            json.dumps(new.model_dump(mode="json"), indent=1, sort_keys=True) + "\n")
        diffs = trace_differences(old, new)
        log(f"{task.id:28s} {old.state:40s} verdict={verdict.outcome.value:11s} "
            f"({verdict.duration_s:.1f}s) {'; '.join(diffs) if diffs else 'same verdict'}")
        pairs.append((old, new))
    return pairs


def scrub(text: str) -> str:
    """Mask timings, timestamps, process ids, ports and temp names."""
    for pattern, repl in _VOLATILE:
        text = pattern.sub(repl, text)
    return text


def trace_differences(old: Trace, new: Trace) -> list[str]:
    """What differs between two recordings of one state, beyond volatile details. Verdict
    reasons are compared only between verifications that drew the same knobs: they quote the
    draw and what it yields (an expected mean, a step count), so they vary with it by design."""
    diffs = []
    if old.workspace_hash != new.workspace_hash:
        diffs.append("workspace hash")
    for a, b in zip(old.runs, new.runs, strict=False):
        if (a.exit_code, a.outcome) != (b.exit_code, b.outcome):
            diffs.append(f"run {a.command!r}: {a.exit_code}/{a.outcome.value} "
                         f"vs {b.exit_code}/{b.outcome.value}")
        elif scrub(a.output) != scrub(b.output):
            diffs.append(f"run {a.command!r}: output differs")
    va, vb = old.verdict, new.verdict
    if (va.passed, va.outcome) != (vb.passed, vb.outcome):
        diffs.append(f"verdict {va.outcome.value} vs {vb.outcome.value}")
    elif va.evidence.get("knobs") == vb.evidence.get("knobs") \
            and scrub("\n".join(va.reasons)) != scrub("\n".join(vb.reasons)):
        diffs.append("verdict reasons differ")
    return diffs
