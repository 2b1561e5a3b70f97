"""Benchmark: how long a task's mock classifier takes on a never-recorded workspace state.

Every state is the task's repo with a line no recording has appended to train.py (a fresh
``_bench_<tag>_<i> = <i>``), so nothing about its training module can come from an earlier call.
Two modes per task:

  warm   the classifier has already seen other states (the files the state shares with them,
         e.g. an unchanged config.py, may be served from the per-text caches);
  cold   every cache of the shared analysis (``sandbox_env.analysis``: parsed modules, per-text
         facts, folded texts) is emptied before each call. The classifier's per-task constants
         (its task spec, the original repo's reference outputs) stay loaded: they are the same
         for every state.

Output: one row per task and mode with the median, p90 and minimum milliseconds per classify.

    python bench/classify_speed.py [--states 12] [--rounds 3] [--task ID ...]
    python bench/classify_speed.py --compare /tmp/old   # another checkout, side by side

With ``--compare ROOT`` the same states are classified by this checkout and by ``ROOT`` (e.g.
``git worktree add /tmp/old <commit>``), each in a worker process of its own, the two called
alternately batch by batch, so both see the same machine load; the table then gives both
medians and their ratio. Figures are benchmark output, never timed tests.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


# --------------------------------------------------------------------------------------------
# worker side: classify states with whichever sandbox_env is importable
# --------------------------------------------------------------------------------------------
class Worker:
    """Classifies never-recorded states of the tasks under ``root``/task_repos."""

    def __init__(self, root: Path) -> None:
        from sandbox_env.suite.tasks import TaskRegistry

        self.tasks = {t.id: t for t in TaskRegistry(root / "task_repos")}

    def state(self, task_id: str, tag: str, i: int) -> dict[str, str]:
        files = dict(self.tasks[task_id].repo_files())
        files["train.py"] = files["train.py"] + f"\n_bench_{tag}_{i} = {i}\n"
        return files

    @staticmethod
    def clear_caches() -> None:
        """Empty every memo of the shared analysis package (lru caches, and with the parsed
        modules the facts kept on them)."""
        for name, mod in list(sys.modules.items()):
            if not name.startswith("sandbox_env.analysis") or mod is None:
                continue
            for obj in list(vars(mod).values()):
                clear = getattr(obj, "cache_clear", None)
                if callable(clear) and getattr(obj, "__module__", "") == name:
                    clear()

    def run(self, task_id: str, mode: str, tag: str, n: int) -> list[float]:
        task = self.tasks[task_id]
        task.classifier(self.state(task_id, tag + "w", 0))  # warm-up: load, per-task constants
        out = []
        for i in range(n):
            files = self.state(task_id, tag, i)
            if mode == "cold":
                self.clear_caches()
            t0 = time.perf_counter()
            task.classifier(files)
            out.append((time.perf_counter() - t0) * 1000)
        return out


def serve(root: Path) -> None:
    """Worker loop: one JSON request per stdin line, one JSON list of ms per stdout line."""
    worker = Worker(root)
    print(json.dumps(sorted(worker.tasks)), flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        print(json.dumps(worker.run(req["task"], req["mode"], req["tag"], req["n"])), flush=True)


class Remote:
    """A worker process running another checkout (its root first on PYTHONPATH)."""

    def __init__(self, root: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(root)}
        self.proc = subprocess.Popen([sys.executable, __file__, "--worker", str(root)], env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     cwd=str(root))
        self.tasks = json.loads(self._line())

    def _line(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"worker exited ({self.proc.wait()})")
        return line

    def run(self, task_id: str, mode: str, tag: str, n: int) -> list[float]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"task": task_id, "mode": mode, "tag": tag, "n": n}) + "\n")
        self.proc.stdin.flush()
        return json.loads(self._line())

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


# --------------------------------------------------------------------------------------------
# driver side
# --------------------------------------------------------------------------------------------
def stats(ms: list[float]) -> dict[str, float]:
    s = sorted(ms)
    return {"median": statistics.median(s), "p90": s[min(len(s) - 1, int(0.9 * len(s)))],
            "min": s[0], "n": len(s)}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--states", type=int, default=12, help="never-recorded states per task, mode, round")
    ap.add_argument("--rounds", type=int, default=3, help="alternating batches per task and mode")
    ap.add_argument("--task", action="append", help="only these tasks (repeatable)")
    ap.add_argument("--compare", type=Path, help="another checkout's root, run side by side")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        serve(args.worker)
        return

    sys.path.insert(0, str(ROOT))
    runners: dict[str, Any] = {"this": Worker(ROOT)}
    if args.compare:
        runners = {"this": Remote(ROOT), "other": Remote(args.compare.resolve())}
    ids = sorted(runners["this"].tasks)
    ids = [t for t in ids if not args.task or t in args.task]
    tag = uuid.uuid4().hex[:8]
    times: dict[tuple[str, str, str], list[float]] = {}
    try:
        for r in range(args.rounds):
            for task_id in ids:
                for mode in ("warm", "cold"):
                    order = list(runners.items())
                    if r % 2:
                        order.reverse()  # alternate who goes first
                    for name, runner in order:
                        ms = runner.run(task_id, mode, f"{tag}{r}{mode[0]}", args.states)
                        times.setdefault((task_id, mode, name), []).extend(ms)
    finally:
        for runner in runners.values():
            if isinstance(runner, Remote):
                runner.close()

    figures = {f"{t}:{m}:{n}": stats(v) for (t, m, n), v in times.items()}
    if args.compare:
        print(f"{'task':26} {'mode':5} {'this med':>9} {'p90':>8} {'other med':>10} {'p90':>8} "
              f"{'speedup':>8}")
        for task_id in ids:
            for mode in ("warm", "cold"):
                a, b = figures[f"{task_id}:{mode}:this"], figures[f"{task_id}:{mode}:other"]
                print(f"{task_id:26} {mode:5} {a['median']:9.1f} {a['p90']:8.1f} {b['median']:10.1f} "
                      f"{b['p90']:8.1f} {b['median'] / a['median']:7.1f}x")
        print(f"ms per classify; {args.rounds} x {args.states} never-recorded states per task and mode; "
              f"other = {args.compare}")
    else:
        print(f"{'task':26} {'mode':5} {'median':>8} {'p90':>8} {'min':>8} {'n':>4}")
        for task_id in ids:
            for mode in ("warm", "cold"):
                f = figures[f"{task_id}:{mode}:this"]
                print(f"{task_id:26} {mode:5} {f['median']:8.1f} {f['p90']:8.1f} {f['min']:8.1f} {f['n']:4d}")
        print(f"ms per classify; {args.rounds} x {args.states} never-recorded states per task and mode")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
