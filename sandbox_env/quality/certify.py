"""Task certification: does the failure reproduce, and does the reference fix pass, every time?

Runs the unfixed repo's run command K times (the failure must show its signature and not
pass) and verifies the reference fix K times, in a real sandbox. No retries: a flaky task is
reported as such. The tail of an unfixed run that showed the signature is kept: a certified
variant's incident report quotes it (``variants/logs/<N>.log``).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ..suite.tasks import TaskRegistry, TaskSpec
from ..workspace import Workspace


def parse_indices(spec: str, count: int) -> list[int]:
    """'all' (1..count-1), 'A-B' or 'A,B,C' -> variant indices (ValueError when out of range)."""
    spec = spec.replace(" ", "")
    if spec == "all":
        return list(range(1, count))
    out: list[int] = []
    for part in filter(None, spec.split(",")):
        lo, _, hi = part.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            raise ValueError(f"--variants: {part!r} is not an index or a range A-B")
        out += list(range(int(lo), int(hi or lo) + 1))
    bad = [i for i in out if not 0 <= i < count]
    if bad:
        raise ValueError(f"--variants: {bad} out of range 0..{count - 1}")
    return sorted(set(out))


def certify_targets(tasks: TaskRegistry, named: list[str], variants: str | None) -> list[str]:
    """The task ids and variant addresses one `certify` invocation covers, in order."""
    if variants is None:
        return list(named) or tasks.ids()
    out: list[str] = []
    for family in (named or tasks.ids()):
        if "@" in family:
            raise ValueError(f"{family}: name families with --variants, or variants without it")
        data = tasks.variants_data(family)
        if data is None:
            raise ValueError(f"{family} declares no variants (task_repos/{family}/variants.toml)")
        out += [f"{family}@{i}" if i else family for i in parse_indices(variants, data.count)]
    return out


class Certification(BaseModel):
    task: str
    runs: int
    reproduced: int
    fixed: int
    bug_durations: list[float]
    fix_durations: list[float]
    notes: list[str]
    bug_log: str = ""  # the last lines of the last unfixed run that showed the signature

    @property
    def certified(self) -> bool:
        return self.reproduced == self.runs and self.fixed == self.runs


LOG_LINES = 40  # kept of an unfixed run: a variant's incident report quotes its last lines


def certify_task(task: TaskSpec, sandbox: Any, runs: int,
                 log: Callable[[str], None] = print) -> Certification:
    reproduced = fixed = 0
    bug_t: list[float] = []
    fix_t: list[float] = []
    notes: list[str] = []
    bug_log = ""
    for i in range(runs):
        res = sandbox.run(Workspace(task.repo_files()), task.run_command, task.limits, task)
        ok = task.failure.shows_in(res.output)
        reproduced += ok
        if ok:
            bug_log = "\n".join(res.output.rstrip("\n").split("\n")[-LOG_LINES:]) + "\n"
        bug_t.append(res.duration_s)
        if not ok:
            last = (res.output.strip().splitlines() or [""])[-1][:200]
            notes.append(f"run {i + 1}: unfixed repo gave {res.outcome.value} without the signature: {last}")
        ws = Workspace(task.repo_files())
        ws.apply_patch(task.solution_patch)
        v = sandbox.verify(ws, task)
        fixed += v.passed
        fix_t.append(v.duration_s)
        if not v.passed:
            notes.append(f"run {i + 1}: reference fix {v.outcome.value}: " + "; ".join(v.reasons)[:300])
        log(f"{task.id:28s} run {i + 1}/{runs}: bug {'reproduced' if ok else 'NOT reproduced'} "
            f"({res.duration_s:.1f}s), fix {'passed' if v.passed else 'FAILED'} ({v.duration_s:.1f}s)")
    return Certification(task=task.id, runs=runs, reproduced=reproduced, fixed=fixed,
                         bug_durations=bug_t, fix_durations=fix_t, notes=notes, bug_log=bug_log)


def markdown(results: list[Certification], provenance: dict[str, Any]) -> str:
    def dur(xs: list[float]) -> str:
        return f"{statistics.median(xs):.1f} / {max(xs):.1f}"

    lines = ["# Task certification", "",
             f"Real runs in `{provenance.get('source')}` (image `{str(provenance.get('image'))[:19]}`, "
             f"torch {provenance.get('torch')}), {datetime.now(UTC):%Y-%m-%d}. Each run is a fresh "
             "container; no retries.", "",
             "| task | failure reproduced (signature) | reference fix passes | unfixed run s (median / max) "
             "| verification s (median / max) | certified |",
             "|---|---:|---:|---:|---:|:---:|"]
    for r in results:
        lines.append(f"| {r.task} | {r.reproduced}/{r.runs} | {r.fixed}/{r.runs} | {dur(r.bug_durations)} "
                     f"| {dur(r.fix_durations)} | {'yes' if r.certified else '**no**'} |")
    notes = [f"- {r.task}: {n}" for r in results for n in r.notes]
    if notes:
        lines += ["", "Failures:", *notes]
    return "\n".join(lines) + "\n"


def write(results: list[Certification], provenance: dict[str, Any], out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(markdown(results, provenance))
