"""Verdicts under gVisor (runsc) against runc on every labelled state; writes docs/runsc-verdicts.md.

Every labelled workspace state of every task (the original repo, the reference fix, each
patch of task_repos/*/patches/labels.toml) is verified in a fresh runsc container. The runc
verdict is the state's committed Docker recording (traces/, recorded under runc and checked
fresh by the test suite), or, with ``--rerun-runc``, a new runc verification of the same
state run alternately. Both the verdict (passed) and the classified outcome are compared. A
measurement, not a timed test: ~162 verifications, 80-110 min on 2 cores (twice that with
--rerun-runc).

    python bench/runsc_verdicts.py [--task oom_graph_leak ...] [--rerun-runc] [--out docs/runsc-verdicts.md]
    python bench/runsc_verdicts.py --task T --state S   # one state again (a --from-log line replaces it)
    python bench/runsc_verdicts.py --from-log RUN.log   # render the table of a run from its printed lines
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import sys
import time
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sandbox_env.sandbox.docker import DockerSandbox  # noqa: E402
from sandbox_env.suite.tasks import TaskRegistry  # noqa: E402
from sandbox_env.suite.traces import load_traces, task_states  # noqa: E402
from sandbox_env.workspace import Workspace  # noqa: E402

# what main() prints per state, and --from-log reads back
LINE = re.compile(r"^(?P<task>\S+) (?P<state>\S+): runc=(?P<ref>True|False|None) runsc=(?P<got>True|False) "
                  r"\((?P<outcome>\w+), (?P<secs>[\d.]+)s\)(?: DIFFERS: (?P<why>.*))?$")


class Row(NamedTuple):
    task: str
    state: str
    label: str
    runc: bool | None
    runsc: bool
    runc_outcome: str | None
    runsc_outcome: str
    why: str
    secs: float


def recorded(task_id: str, registry: TaskRegistry) -> dict[str, tuple[bool, str]]:
    """The committed runc recording of each state of a task: (passed, outcome)."""
    return {t.state: (t.verdict.passed, t.verdict.outcome.value) for t in load_traces(registry.get(task_id))
            if t.provenance.source == "docker"}


def labels_of(task) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """Each labelled patch's state name -> its label (other states are labelled by their name)."""
    return {f"patch:{p.file}": p.label for p in task.patches}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--task", action="append", help="tasks (default: all)")
    ap.add_argument("--state", action="append", help="only these states (e.g. original, patch:x.patch)")
    ap.add_argument("--rerun-runc", action="store_true", help="verify under runc too, alternately")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "runsc-verdicts.md")
    ap.add_argument("--from-log", type=Path, help="render the table from the lines a run printed")
    a = ap.parse_args()
    registry = TaskRegistry()
    if a.from_log:
        from_log(a, registry)
        return
    tasks = [registry.get(t) for t in a.task] if a.task else list(registry)
    # an owner of this run's own: a sandbox reaps its owner's leftovers at start, and a second run
    # (a --state run beside a whole one) under a shared owner killed the other's verification
    # (exit 137); `sandbox-env reap` removes what a stopped run leaves
    owner = f"bench-runsc-verdicts-{os.getpid()}"
    runsc = DockerSandbox(owner=owner, pool_size=0, runtime="runsc")
    runc = DockerSandbox(owner=f"{owner}-runc", pool_size=0, runtime="runc") if a.rerun_runc else None
    header = runtime_line(runsc)
    print(header, flush=True)
    rows: list[Row] = []
    started = time.perf_counter()
    try:
        for task in tasks:
            committed = recorded(task.id, registry)
            labels = labels_of(task)
            for state, _behaviour, files in task_states(task):
                if a.state and state not in a.state:
                    continue
                if runc is not None:
                    rv = runc.verify(Workspace(files), task)
                    ref, ref_outcome = rv.passed, rv.outcome.value
                else:
                    ref, ref_outcome = committed.get(state, (None, None))
                t = time.perf_counter()
                v = runsc.verify(Workspace(files), task)
                secs = time.perf_counter() - t
                why = "" if v.passed == ref else "; ".join(v.reasons)[:300].replace("|", "/")
                rows.append(Row(task.id, state, labels.get(state, state), ref, v.passed, ref_outcome,
                                v.outcome.value, why, secs))
                print(f"{task.id} {state}: runc={ref} runsc={v.passed} ({v.outcome.value}, "
                      f"{secs:.1f}s){' DIFFERS: ' + why if v.passed != ref else ''}", flush=True)
            write(a.out, rows, header, (time.perf_counter() - started) / 60, rerun=a.rerun_runc, done=False)
    finally:
        runsc.close()
        if runc is not None:
            runc.close()
    write(a.out, rows, header, (time.perf_counter() - started) / 60, rerun=a.rerun_runc, done=True)


def runtime_line(runsc: DockerSandbox) -> str:
    report = runsc.runtime_report()
    if not report.in_effect:
        sys.exit(f"runsc is not in effect: {report}")
    return f"runsc {report.version} (kernel seen inside: {report.kernel})"


def from_log(a: argparse.Namespace, registry: TaskRegistry) -> None:
    """Rows from the lines one or more runs printed (of the committed recordings, not --rerun-runc),
    a later line of a state replacing an earlier one (a state verified again with --state); the
    runc outcome is the committed recording's. The runtime is the line the run printed first, or
    (a log without it) the one registered now."""
    rows: dict[tuple[str, str], Row] = {}
    committed: dict[str, dict[str, tuple[bool, str]]] = {}
    labels: dict[str, dict[str, str]] = {}
    lines = a.from_log.read_text().splitlines()
    for line in lines:
        m = LINE.match(line)
        if not m:
            continue
        tid, state = m["task"], m["state"]
        if tid not in committed:
            committed[tid] = recorded(tid, registry)
            labels[tid] = labels_of(registry.get(tid))
        ref = committed[tid].get(state)
        rows[tid, state] = Row(tid, state, labels[tid].get(state, state), None if ref is None else ref[0],
                               m["got"] == "True", None if ref is None else ref[1], m["outcome"],
                               (m["why"] or "").replace("|", "/"), float(m["secs"]))
    header = next((ln for ln in lines if ln.startswith("runsc ")), None)
    if header is None:
        probe = DockerSandbox(owner=f"bench-runsc-probe-{os.getpid()}", pool_size=0, runtime="runsc")
        try:
            header = runtime_line(probe)
        finally:
            probe.close()
    missing = [f"{t.id} {state}" for t in registry for state, _, _ in task_states(t)
               if (t.id, state) not in rows]
    write(a.out, list(rows.values()), header, sum(r.secs for r in rows.values()) / 60, rerun=False, done=True,
          source=f"the lines of `{a.from_log.name}`", missing=missing)


def write(out: Path, rows: list[Row], header: str, minutes: float, *, rerun: bool, done: bool,
          source: str | None = None, missing: list[str] | None = None) -> None:
    """Render the table of ``rows`` to ``out``; called after every task, so a stopped run keeps its rows."""
    agree = sum(r.runc == r.runsc for r in rows)
    same = sum(r.runc_outcome == r.runsc_outcome for r in rows)
    ref = "re-verified under runc alternately" if rerun else "the committed Docker (runc) recording"
    how = (f"Rendered from {source} (`--from-log`); {minutes:.1f} min of runsc verifications"
           if source else f"Produced by `python bench/runsc_verdicts.py{' --rerun-runc' if rerun else ''}` "
           f"in {minutes:.1f} min{'' if done else ' (partial: stopped)'}")
    lines = [f"# Verdicts under runsc vs runc ({datetime.date.today().isoformat()})", "",
             f"{how}. {header}; runc verdict: {ref}.", "",
             f"**{agree}/{len(rows)} verdicts agree; {same}/{len(rows)} classified outcomes agree.**", "",
             "| task | states | same verdict | same outcome |", "|---|---:|---:|---:|"]
    for tid in dict.fromkeys(r.task for r in rows):
        mine = [r for r in rows if r.task == tid]
        lines.append(f"| {tid} | {len(mine)} | {sum(r.runc == r.runsc for r in mine)} | "
                     f"{sum(r.runc_outcome == r.runsc_outcome for r in mine)} |")
    lines += ["", "| task | state | label | runc | runsc | runc outcome | runsc outcome | seconds (runsc) "
              "| runsc reasons if the verdicts differ |", "|---|---|---|---|---|---|---|---:|---|"]
    lines += [f"| {r.task} | {r.state} | {r.label} | {r.runc} | {r.runsc} | {r.runc_outcome} | "
              f"{r.runsc_outcome} | {r.secs:.1f} | {r.why} |" for r in rows]
    if missing:
        lines += ["", f"Not verified under runsc yet ({len(missing)} labelled states; "
                  "`--task T --state S` runs them):", ""] + [f"- {m}" for m in missing]
    out.write_text("\n".join(lines) + "\n")
    if done:
        print(f"wrote {out}: {agree}/{len(rows)} verdicts, {same}/{len(rows)} outcomes agree")


if __name__ == "__main__":
    main()
