"""Process mode vs docker mode: the verdict of every labelled state, against its docker recording.

Usage: python tools/process_fidelity.py [TASK...] [--workers 2] [--json OUT.json]

Verifies every labelled workspace state (original, reference fix, every patch of
task_repos/*/patches/labels.toml) in process mode and compares passed/outcome with the
state's docker trace. Prints a Markdown section (dated) for docs/fidelity.md; exit 1 on any
disagreement.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

from sandbox_env.sandbox.process import ProcessSandbox
from sandbox_env.suite.tasks import TaskRegistry
from sandbox_env.suite.traces import load_traces, task_states
from sandbox_env.workspace import Workspace


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("tasks", nargs="*")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--json")
    args = ap.parse_args()
    tasks = TaskRegistry()
    sbx = ProcessSandbox()
    jobs = []
    for tid in args.tasks or tasks.ids():
        task = tasks.get(tid)
        real = {t.state: t.verdict for t in load_traces(task) if t.provenance.source == "docker"}
        labels = {f"patch:{p.file}": p.label for p in task.patches}
        jobs += [(task, state, labels.get(state, state), files, real.get(state))
                 for state, _b, files in task_states(task)]

    def one(job):  # type: ignore[no-untyped-def]
        task, state, label, files, docker = job
        v = sbx.verify(Workspace(files), task)
        row = {"task": task.id, "state": state, "label": label, "process": v.outcome.value,
               "process_passed": v.passed, "docker": docker.outcome.value if docker else None,
               "docker_passed": docker.passed if docker else None, "seconds": v.duration_s}
        print(f"{task.id:26s} {state:48s} docker={row['docker']!s:11s} process={row['process']:11s} "
              f"({v.duration_s:.1f}s)", file=sys.stderr, flush=True)
        return row

    start = time.monotonic()
    try:
        with ThreadPoolExecutor(args.workers) as pool:
            rows = list(pool.map(one, jobs))
    finally:
        sbx.close()
    wall = time.monotonic() - start
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "wall_s": wall, "provenance": sbx.provenance()}, f, indent=1)
    print(markdown(rows, wall, sbx.provenance()))
    return 0 if all(r["process_passed"] == r["docker_passed"] for r in rows) else 1


def markdown(rows: list[dict], wall: float, prov: dict) -> str:  # type: ignore[type-arg]
    lines = [f"## Process mode vs docker mode ({datetime.now(UTC):%Y-%m-%d})", "",
             f"Every labelled state verified in process mode (bubblewrap {prov.get('bwrap')}, runner venv "
             f"`{prov.get('image')}`, torch {prov.get('torch')}, Python {prov.get('runner_python')}) and "
             "compared with its docker recording (`task_repos/*/traces`). Agreement: same passed; "
             f"outcome: same classified outcome. `python tools/process_fidelity.py`, {wall / 60:.0f} min "
             "wall on 2 cores.", "",
             "| task | states | same verdict | same outcome | rate |", "|---|---:|---:|---:|---:|"]
    for t in sorted({r["task"] for r in rows}):
        mine = [r for r in rows if r["task"] == t]
        ok = sum(r["process_passed"] == r["docker_passed"] for r in mine)
        same = sum(r["process"] == r["docker"] for r in mine)
        lines.append(f"| {t} | {len(mine)} | {ok} | {same} | {ok / len(mine):.1%} |")
    ok = sum(r["process_passed"] == r["docker_passed"] for r in rows)
    same = sum(r["process"] == r["docker"] for r in rows)
    lines.append(f"| **all** | {len(rows)} | {ok} | {same} | **{ok / max(1, len(rows)):.1%}** |")
    bad = [r for r in rows if r["process"] != r["docker"]]
    lines += ["", "Differences:" if bad else "No differences."]
    lines += [f"- {r['task']} {r['state']} ({r['label']}): docker {r['docker']}, process {r['process']}"
              for r in bad]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
