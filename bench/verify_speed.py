"""Benchmark: docker verification time of this checkout against other checkouts, side by side.

Each checkout (``--vs NAME=DIR``, e.g. a ``git worktree`` of main) and this one get a long-lived
worker process (a DockerSandbox of their own code); rounds alternate between them task by task,
so load drifts hit every side alike. Per task and round: the episode's own run of the reference
fix (``python train.py`` through this checkout's sandbox), then one verification of the reference
fix by each side, in an order rotated per round. This checkout runs twice:

- ``this (live)``: its reference bank off (``SANDBOX_ENV_REFERENCE_BANK=off``): every verification
  runs the reference fix, as a verification whose draw the bank has no results for yet;
- ``this (banked)``: a bank of one draw per check, filled by one untimed verification first:
  every timed verification gets the reference's results from the bank;
- ``this (episode)``: as banked, after an untimed own run of the same files that exited 0 (what
  the oracle, and most agents, do before they submit): the check takes that run for its own run
  from the workspace.

With the bank's defaults (16 draws per check, each serving 8 verifications) a busy check runs
the reference in 1 verification of 8, so its steady-state time is ``live/8 + 7*banked/8``
(printed as ``this (steady)``). Medians per task; ratios to each other side and to the own run.

    python bench/verify_speed.py --vs main=/tmp/bench-main [--rounds 2] [--task ddp_gradient_hang ...]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
USES = 8  # the bank's default uses per draw (sandbox_env/sandbox/reference_bank.py)

WORKER = r"""
import json, sys, time
from pathlib import Path
from sandbox_env.sandbox.docker import DockerSandbox
from sandbox_env.suite.tasks import TaskRegistry
from sandbox_env.workspace import Workspace
mode = sys.argv[1]
reg = TaskRegistry(Path("task_repos"))
sb = DockerSandbox()
if mode == "banked":
    from sandbox_env.sandbox.reference_bank import ReferenceBank
    sb.bank = ReferenceBank(sb.provenance(), slots=1, uses=10**9, where=None)
def fixed(tid):
    t = reg.get(tid)
    ws = Workspace(t.repo_files())
    ws.apply_patch(t.solution_patch)
    return t, ws
print("ready", flush=True)
try:
    for line in sys.stdin:
        op, tid = line.split()
        t, ws = fixed(tid)
        t0 = time.monotonic()
        if op == "run":
            r = sb.run(ws, t.run_command, t.limits, t)
            out = {"s": time.monotonic() - t0, "ok": r.outcome.value == "passed"}
        else:
            if op == "episode":  # the episode's own run first (untimed): the oracle reruns, then submits
                before = ws.exact_hash()
                r = sb.run(ws, t.run_command, t.limits, t)
                ws.note_run(before, r.outcome.value == "passed", r.duration_s)
                t0 = time.monotonic()
            v = sb.verify(ws, t)
            out = {"s": time.monotonic() - t0, "ok": v.passed, "outcome": v.outcome.value, "op": op,
                   "reference_s": v.evidence.get("reference_s"), "banked": v.evidence.get("reference_banked"),
                   "world": v.evidence.get("world_size")}
        print(json.dumps(out), flush=True)
finally:
    sb.close()
"""


class Worker:
    def __init__(self, name: str, root: Path, env: dict[str, str] | None = None, mode: str = "plain",
                 op: str = "verify") -> None:
        self.name, self.op = name, op
        e = {**os.environ, "PYTHONPATH": str(root), **(env or {})}
        self.proc = subprocess.Popen([sys.executable, "-c", WORKER, mode], cwd=root, env=e, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "ready", name

    def ask(self, op: str, task: str) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{op} {task}\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=120)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vs", action="append", default=[], help="NAME=DIR: another checkout to compare")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--task", action="append", help="tasks (default: every family's variant 0)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    tasks = args.task or sorted(p.name for p in (ROOT / "task_repos").iterdir() if (p / "task.toml").exists())
    workers = [Worker(n, Path(d).resolve()) for n, d in (v.split("=", 1) for v in args.vs)]
    live = Worker("this (live)", ROOT, {"SANDBOX_ENV_REFERENCE_BANK": "off"})
    banked = Worker("this (banked)", ROOT, mode="banked")
    episode = Worker("this (episode)", ROOT, mode="banked", op="episode")
    sides = [*workers, live, banked, episode]
    times: dict[str, dict[str, list[float]]] = {t: {w.name: [] for w in [*sides]} | {"own run": []}
                                                for t in tasks}
    try:
        for task in tasks:  # fill the banked sides' one draw per check (untimed)
            assert banked.ask("verify", task)["ok"] and episode.ask("verify", task)["ok"], task
        for rnd in range(args.rounds):
            for task in tasks:
                own = live.ask("run", task)
                times[task]["own run"].append(own["s"])
                order = sides[rnd % len(sides):] + sides[:rnd % len(sides)]
                for w in order:
                    r = w.ask(w.op, task)
                    if not r["ok"]:
                        print(f"{w.name} {task}: {r}", file=sys.stderr)
                    times[task][w.name].append(r["s"])
                    print(f"[round {rnd + 1}] {task:28s} {w.name:14s} {r['s']:7.1f}s {r.get('outcome')} "
                          f"banked={r.get('banked')} world={r.get('world')}", file=sys.stderr, flush=True)
    finally:
        for w in sides:
            w.close()
    names = [w.name for w in sides] + ["this (steady)", "episode (steady)"]
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    title = f"Verification time side by side, docker runc, {when}, medians of {args.rounds} rounds (seconds)"
    lines = [title, "",
             "| task | own run | " + " | ".join(names) + " | " + " | ".join(
                 f"episode steady / {w.name}" for w in workers)
             + " | steady / own run | episode steady / own run |",
             "|---|---:|" + "---:|" * (len(names) + len(workers) + 2)]
    for task in tasks:
        med = {k: statistics.median(v) for k, v in times[task].items() if v}
        med["this (steady)"] = med["this (live)"] / USES + med["this (banked)"] * (USES - 1) / USES
        # a live verification after a clean own run skips the workspace run too (~ the own run)
        med["episode (steady)"] = ((med["this (live)"] - med["own run"]) / USES
                                   + med["this (episode)"] * (USES - 1) / USES)
        ratios = [f"{med['episode (steady)'] / med[w.name]:.2f}x" for w in workers]
        lines.append(f"| {task} | {med['own run']:.1f} | " + " | ".join(f"{med[n]:.1f}" for n in names)
                     + " | " + " | ".join(ratios) + f" | {med['this (steady)'] / med['own run']:.2f}x"
                     + f" | {med['episode (steady)'] / med['own run']:.2f}x |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
