"""Benchmark: the cost of opening an episode on a full server (every reset past capacity makes
room by evicting the least recently used finished episode), in process.

Fills a SessionManager with ``--sessions`` finished mock episodes (the mock-mode default cap is
1024), then times ``open()`` of new ids, each evicting one, and prints the median in us.
``--compare DIR`` times DIR's sandbox_env/server/sessions.py (another checkout, e.g. from
``git worktree add``) alternately in the same run.

    python bench/reset_at_capacity.py [--sessions 1024] [--opens 2000] [--rounds 3] [--compare DIR]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sandbox_env.actions import parse_action  # noqa: E402
from sandbox_env.environment import TriageEnvironment  # noqa: E402
from sandbox_env.sandbox.mock import MockSandbox  # noqa: E402
from sandbox_env.suite.tasks import TaskRegistry  # noqa: E402

SUBMIT = parse_action({"action_type": "submit_fix", "explanation": "bench"})


def sessions_module(checkout: Path) -> ModuleType:
    """``checkout``'s sessions.py, loaded as a module of this package (its imports resolve here)."""
    path = checkout / "sandbox_env" / "server" / "sessions.py"
    name = f"sandbox_env.server._bench_sessions_{abs(hash(str(path)))}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def median_open_us(mod: ModuleType, tasks: TaskRegistry, n: int, k: int) -> float:
    sbx = MockSandbox()
    m = mod.SessionManager(lambda: TriageEnvironment(tasks, sbx), n, 900)

    def play(eid: str) -> float:
        t = time.perf_counter()
        s = m.open(eid)
        took = time.perf_counter() - t
        s.env.reset(task="oom_graph_leak", compact=True)
        s.env.step(SUBMIT)
        s.touch()
        return took

    for i in range(n):
        play(f"fill-{i}")
    return statistics.median(play(f"new-{i}") for i in range(k)) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=1024)
    ap.add_argument("--opens", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--compare", type=Path, help="another checkout, timed alternately")
    a = ap.parse_args()
    tasks = TaskRegistry(ROOT / "task_repos")
    mods = {"this": sessions_module(ROOT)}
    if a.compare:
        mods["compare"] = sessions_module(a.compare.resolve())
    for r in range(a.rounds):
        cells = [f"{name} {median_open_us(mod, tasks, a.sessions, a.opens):7.1f} us"
                 for name, mod in mods.items()]
        print(f"round {r + 1}: open() at capacity {a.sessions}, median: " + ", ".join(cells))


if __name__ == "__main__":
    main()
