"""Benchmark: where a docker verification's time goes, beside the episode's own run of the fix.

For each task (default: every family's variant 0), in rounds (own run, verification, own run,
...: the machine is noisy), the reference fix is run once as the agent would run it
(`run_command` through DockerSandbox.run) and verified once (DockerSandbox.verify). The
verification is split into:

- container start (create + start of the verify box, host side) and copy-in (workspace, checks);
- reference: the reference fix's run under the drawn knobs (the check's ``reference_s``);
- agent runs: each run of the submitted code the check made (its ``runs``: the driver under the
  drawn knobs, ``python train.py`` from the workspace and from the production copy);
- check overhead: the rest of the check process (its own start, imports, probes, comparing);
- teardown (removing the box).

Medians per task, and verification / own run. Run it on an idle machine, one verification at a
time; ``--runtime runsc`` for gVisor. Prints a Markdown table; ``--out FILE`` also writes it.

    python bench/verify_breakdown.py [--rounds 3] [--task oom_graph_leak ...] [--runtime runsc]
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sandbox_env.sandbox.docker import DockerSandbox  # noqa: E402
from sandbox_env.suite.tasks import TaskRegistry, TaskSpec  # noqa: E402
from sandbox_env.workspace import Workspace  # noqa: E402

COLUMNS = ("own run", "verify", "start", "copy", "reference", "agent runs", "check other", "teardown")


def fixed(task: TaskSpec) -> Workspace:
    ws = Workspace(task.repo_files())
    ws.apply_patch(task.solution_patch)
    return ws


def split(evidence: dict[str, Any], total: float) -> dict[str, float]:
    """One verification's phases from its evidence (seconds)."""
    phases = evidence.get("phases_s", {})
    check = float(phases.get("check", 0.0))
    reference = float(evidence.get("reference_s", 0.0))
    agent = sum(float(r.get("s", 0.0)) for r in evidence.get("runs", {}).values())
    return {"verify": total, "start": float(phases.get("container_start", 0.0)),
            "copy": float(phases.get("copy_in", 0.0)), "reference": reference, "agent runs": agent,
            "check other": max(0.0, check - reference - agent),
            "teardown": float(phases.get("teardown", 0.0))}


def measure(sandbox: DockerSandbox, task: TaskSpec, rounds: int) -> dict[str, float]:
    rows: list[dict[str, float]] = []
    for _ in range(rounds):
        ws = fixed(task)
        own = sandbox.run(ws, task.run_command, task.limits, task)
        if own.outcome.value != "passed":
            raise RuntimeError(f"{task.id}: the reference fix's own run {own.outcome.value}")
        t0 = time.monotonic()
        verdict = sandbox.verify(ws, task)
        total = time.monotonic() - t0
        if not verdict.passed:
            raise RuntimeError(f"{task.id}: the reference fix was rejected: {verdict.reasons[:2]}")
        rows.append({"own run": own.duration_s, **split(verdict.evidence, total)})
        print(f"  {task.id}: own {own.duration_s:.1f}s, verify {total:.1f}s", file=sys.stderr)
    return {c: statistics.median(r[c] for r in rows) for c in COLUMNS}


def table(results: dict[str, dict[str, float]], runtime: str, rounds: int) -> str:
    lines = [f"Verification breakdown, docker {runtime}, {datetime.date.today()}, medians of {rounds} "
             "rounds (seconds; one verification at a time)", "",
             "| task | " + " | ".join(COLUMNS) + " | verify / own run |",
             "|---|" + "---:|" * (len(COLUMNS) + 1)]
    for task, r in results.items():
        cells = " | ".join(f"{r[c]:.1f}" for c in COLUMNS)
        lines.append(f"| {task} | {cells} | {r['verify'] / r['own run']:.2f}x |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--task", action="append", help="tasks to time (default: every family's variant 0)")
    ap.add_argument("--runtime", default="runc", choices=("runc", "runsc"))
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    registry = TaskRegistry(ROOT / "task_repos")
    tasks = args.task or registry.ids()
    sandbox = DockerSandbox(owner="bench-verify", runtime=args.runtime)
    try:
        results = {t: measure(sandbox, registry.get(t), args.rounds) for t in tasks}
    finally:
        sandbox.close()
    text = table(results, args.runtime, args.rounds)
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
