"""Benchmark: the seed's full observation (every file every step) vs the compact one, over HTTP.

One mock-mode server, one keep-alive client, the reference-fix episode of every task (reset,
run, reads, edits, run, submit), played alternately in the full and the compact form in one
run (the machine is noisy). Reports steps/s, mean reply size and the compact/full ratio.

    python bench/observation_forms.py [--rounds 5] [--episodes 20]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.load import start_server  # noqa: E402
from sandbox_env.suite.oracle import oracle_actions  # noqa: E402
from sandbox_env.suite.tasks import TaskRegistry  # noqa: E402


def play(http: httpx.Client, tasks: TaskRegistry, episodes: int, compact: bool) -> tuple[float, float]:
    """Steps per second and mean reply bytes over ``episodes`` oracle episodes."""
    steps, size, names = 0, 0, [t.id for t in tasks]
    t0 = time.perf_counter()
    for i in range(episodes):
        task = tasks.get(names[i % len(names)])
        r = http.post("/reset", json={"task": task.id, "episode_id": "bench", "compact": compact})
        size += len(r.content)
        steps += 1
        for action in oracle_actions(task):
            r = http.post("/step", json={"action": action, "episode_id": "bench"})
            r.raise_for_status()
            size += len(r.content)
            steps += 1
    return steps / (time.perf_counter() - t0), size / steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--episodes", type=int, default=20)
    args = ap.parse_args()
    tasks = TaskRegistry(ROOT / "task_repos")
    proc, url = start_server("mock", 4)
    rates: dict[bool, list[float]] = {False: [], True: []}
    sizes: dict[bool, float] = {}
    try:
        with httpx.Client(base_url=url, timeout=60) as http:
            play(http, tasks, 4, False)  # warm-up: caches, classifier, traces
            for _ in range(args.rounds):
                for compact in (False, True):
                    rate, sizes[compact] = play(http, tasks, args.episodes, compact)
                    rates[compact].append(rate)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    for compact, label in ((False, "full (seed)"), (True, "compact")):
        r = rates[compact]
        print(f"{label:12s} steps/s median {statistics.median(r):7.1f} (min {min(r):.1f}, max {max(r):.1f}); "
              f"mean reply {sizes[compact] / 1024:.1f} KiB")
    ratio = statistics.median(rates[True]) / statistics.median(rates[False])
    print(f"compact/full throughput ratio: {ratio:.2f}x; reply size ratio "
          f"{sizes[True] / sizes[False]:.2f}")


if __name__ == "__main__":
    main()
