"""Verdicts under gVisor (runsc) against runc on every labelled state; writes docs/runsc.md.

Every labelled workspace state of every task (the original repo, the reference fix, each
patch of task_repos/*/patches/labels.toml) is verified in a fresh runsc container. The runc
verdict is the state's committed Docker recording (traces/, recorded under runc and checked
fresh by the test suite), or, with ``--rerun-runc``, a new runc verification of the same
state run alternately. A measurement, not a timed test: ~142 verifications, 40-70 min on 2
cores (twice that with --rerun-runc).

    python bench/runsc_verdicts.py [--task oom_graph_leak ...] [--rerun-runc] [--out docs/runsc.md]
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sandbox_env.sandbox.docker import DockerSandbox  # noqa: E402
from sandbox_env.sandbox.docker.runtime import RuntimeReport  # noqa: E402
from sandbox_env.tasks import TaskRegistry  # noqa: E402
from sandbox_env.traces import load_traces, task_states  # noqa: E402
from sandbox_env.workspace import Workspace  # noqa: E402

MARK = "<!-- verdicts -->"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--task", action="append", help="tasks (default: all)")
    ap.add_argument("--rerun-runc", action="store_true", help="verify under runc too, alternately")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "runsc-verdicts.md")
    a = ap.parse_args()
    registry = TaskRegistry()
    tasks = [registry.get(t) for t in a.task] if a.task else list(registry)
    runsc = DockerSandbox(owner="bench-runsc-verdicts", pool_size=0, runtime="runsc")
    runc = DockerSandbox(owner="bench-runc-verdicts", pool_size=0, runtime="runc") if a.rerun_runc else None
    report = runsc.runtime_report()
    if not report.in_effect:
        sys.exit(f"runsc is not in effect: {report}")
    rows: list[tuple[str, str, str, bool | None, bool, str, float]] = []
    started = time.perf_counter()
    try:
        for task in tasks:
            recorded = {t.state: t.verdict for t in load_traces(task) if t.provenance.source == "docker"}
            labels = {f"patch:{p.file}": p.label for p in task.patches}
            for state, _behaviour, files in task_states(task):
                if runc is not None:
                    ref: bool | None = runc.verify(Workspace(files), task).passed
                else:
                    ref = recorded[state].passed if state in recorded else None
                t = time.perf_counter()
                v = runsc.verify(Workspace(files), task)
                secs = time.perf_counter() - t
                why = "" if v.passed == ref else "; ".join(v.reasons)[:300].replace("|", "/")
                rows.append((task.id, state, labels.get(state, state), ref, v.passed, why, secs))
                print(f"{task.id} {state}: runc={ref} runsc={v.passed} ({v.outcome.value}, "
                      f"{secs:.1f}s){' DIFFERS: ' + why if v.passed != ref else ''}", flush=True)
            write(a, rows, report, started, done=False)
    finally:
        runsc.close()
        if runc is not None:
            runc.close()
    write(a, rows, report, started, done=True)


def write(a: argparse.Namespace, rows: list[tuple[str, str, str, bool | None, bool, str, float]],
          report: RuntimeReport, started: float, *, done: bool) -> None:
    """Render the table of ``rows`` to ``a.out``; called after every task, so a stopped run keeps its rows."""
    agree = sum(r[3] == r[4] for r in rows)
    source = "re-verified under runc alternately" if a.rerun_runc else "the committed Docker (runc) recording"
    lines = [f"# Verdicts under runsc vs runc ({datetime.date.today().isoformat()})", "",
             f"Produced by `python bench/runsc_verdicts.py{' --rerun-runc' if a.rerun_runc else ''}` "
             f"in {(time.perf_counter() - started) / 60:.1f} min{'' if done else ' (partial: stopped)'}."
             f" runsc {report.version} (kernel seen inside: {report.kernel}); runc verdict: {source}.", "",
             f"**{agree}/{len(rows)} verdicts agree.**", "",
             "| task | states | agree |", "|---|---:|---:|"]
    for tid in dict.fromkeys(r[0] for r in rows):
        mine = [r for r in rows if r[0] == tid]
        lines.append(f"| {tid} | {len(mine)} | {sum(r[3] == r[4] for r in mine)} |")
    lines += ["", "| task | state | label | runc | runsc | seconds (runsc) | runsc reasons if they differ |",
              "|---|---|---|---|---|---:|---|"]
    lines += [f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]} | {r[6]:.1f} | {r[5]} |" for r in rows]
    a.out.write_text("\n".join(lines) + "\n")
    if done:
        print(f"wrote {a.out}: {agree}/{len(rows)} agree")


if __name__ == "__main__":
    main()
