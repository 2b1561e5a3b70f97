"""Benchmark: a thousand concurrent /ws episodes on one mock-mode server, each stepping.

Opens ``--sessions`` WebSockets (ramped), resets each to a task (the four in turn), then every
session steps like an agent that thinks between actions: a pause drawn around ``--think``
seconds, then the next action of a realistic loop (``python train.py``, read_file, an edit,
``python train.py``, view_git_diff, the edit undone, read_file), for ``--seconds``. In a
fraction ``--novel`` of the sessions (spaced evenly over the ramp) the edit adds code, so
every second run is of a state no recording has (the classifier runs); in the rest it adds a
comment (a recorded state).
Reports steps/s, p50/p99/max step latency, errors, sessions the server saw, and
the server's RSS before the sessions, with all of them open, and after they closed.

Targets (benchmark, not test; issue #15): >= 1,000 sessions, p99 < 250 ms, zero errors, memory
bounded (reported per session).

    python bench/many_sessions.py [--sessions 1000] [--seconds 60] [--think 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from websockets.asyncio.client import connect as ws_connect

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.http_ws_throughput import free_port, pct  # noqa: E402
from bench.load import rss_mb  # noqa: E402
from sandbox_env.suite.tasks import TaskRegistry  # noqa: E402


def loop_actions(task: Any, i: int, novel: bool) -> list[dict[str, Any]]:
    """One session's repeating actions. ``novel``: the edit adds code, so the next run is of a
    never-recorded state (classified); else it adds a comment (the recorded state's hash)."""
    files = task.repo_files()
    last = files["train.py"].rstrip("\n").splitlines()[-1] + "\n"
    line = f"_session_{i} = 1\n" if novel else f"# session {i}\n"
    run = {"action_type": "execute_bash", "command": task.run_command}
    return [run, {"action_type": "read_file", "filename": task.signal_files[0]},
            {"action_type": "edit_file", "filename": "train.py", "old_str": last, "new_str": last + line},
            run, {"action_type": "view_git_diff"},
            {"action_type": "edit_file", "filename": "train.py", "old_str": line, "new_str": ""},
            {"action_type": "read_file", "filename": task.signal_files[-1]}]


async def session(url: str, i: int, task: Any, *, start: float, until: float, think: float,
                  novel: bool, lat: list[float], errors: list[str], opened: list[int]) -> None:
    await asyncio.sleep(max(0.0, start - time.monotonic()))
    try:
        async with ws_connect(url, max_size=None, open_timeout=60, ping_interval=None) as ws:
            await ws.send(json.dumps({"type": "reset", "data": {"task": task.id, "compact": True}}))
            first = json.loads(await ws.recv())
            if first.get("type") == "error":
                errors.append(f"{i} reset: {str(first)[:200]}")
                return
            opened.append(i)
            plan, k = loop_actions(task, i, novel), 0
            data = first["data"]
            budget = int((data.get("observation") or data).get("max_steps", 10))
            while time.monotonic() < until:
                await asyncio.sleep(think * random.uniform(0.5, 1.5))
                if k >= budget - 1:  # start the next episode before the step budget runs out
                    await ws.send(json.dumps({"type": "reset", "data": {"task": task.id, "compact": True}}))
                    await ws.recv()
                    k = 0
                t = time.perf_counter()
                await ws.send(json.dumps({"type": "step", "data": plan[k % len(plan)]}))
                reply = await ws.recv()
                lat.append(time.perf_counter() - t)
                if str(reply)[:16] == '{"type":"error"':
                    errors.append(f"{i} step: {str(reply)[:200]}")
                k += 1
    except Exception as exc:  # every failure is a reported error
        errors.append(f"{i}: {type(exc).__name__}: {str(exc)[:200]}")


def spread(i: int, share: float) -> bool:
    """Whether session ``i`` is one of the ``share`` novel ones, spaced evenly over the ramp
    (not all at its start, where their classifications would queue behind each other)."""
    return int((i + 1) * share) > int(i * share)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=1000)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--think", type=float, default=5.0, help="mean pause between a session's steps")
    ap.add_argument("--ramp", type=float, default=20.0, help="seconds over which sessions connect")
    ap.add_argument("--novel", type=float, default=0.1,
                    help="fraction of sessions whose edits reach never-recorded states (classified)")
    a = ap.parse_args()
    tasks = list(TaskRegistry(ROOT / "task_repos"))
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "sandbox_env.cli", "serve", "--mode", "mock",
                             "--port", str(port), "--log-level", "warning",
                             "--max-sessions", str(a.sessions + 16)], cwd=ROOT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(base + "/health", timeout=2).raise_for_status()
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        before = rss_mb(proc.pid)
        lat: list[float] = []
        errors: list[str] = []
        opened: list[int] = []
        peak = {"rss": before, "sessions": 0}

        async def watch(until: float) -> None:
            async with httpx.AsyncClient(base_url=base, timeout=30) as http:
                while time.monotonic() < until:
                    await asyncio.sleep(2)
                    peak["rss"] = max(peak["rss"], rss_mb(proc.pid))
                    h = (await http.get("/health")).json()
                    peak["sessions"] = max(peak["sessions"], h["active_sessions"])

        async def go() -> None:
            t0 = time.monotonic()
            until = t0 + a.ramp + a.seconds
            await asyncio.gather(watch(until), *(
                session(f"ws://127.0.0.1:{port}/ws", i, tasks[i % len(tasks)],
                        start=t0 + a.ramp * i / a.sessions, until=until, think=a.think,
                        novel=spread(i, a.novel),
                        lat=lat, errors=errors, opened=opened)
                for i in range(a.sessions)))

        t0 = time.monotonic()
        asyncio.run(go())
        wall = time.monotonic() - t0
        time.sleep(2)
        after = rss_mb(proc.pid)
        left = httpx.get(base + "/health").json()["active_sessions"]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    lat.sort()
    print(f"sessions {len(opened)}/{a.sessions} opened, peak live {peak['sessions']}, "
          f"left after close {left}")
    print(f"steps {len(lat)} in {wall:.0f} s ({len(lat) / max(wall, 1e-9):.0f}/s), errors {len(errors)}")
    if lat:
        print(f"step latency p50 {pct(lat, 0.5):.1f} ms, p99 {pct(lat, 0.99):.1f} ms, "
              f"max {lat[-1] * 1000:.0f} ms, mean {statistics.mean(lat) * 1000:.1f} ms")
    print(f"server RSS before {before:.0f} MB, peak {peak['rss']:.0f} MB "
          f"({(peak['rss'] - before) / max(1, len(opened)) * 1024:.0f} KiB/session), after {after:.0f} MB")
    for e in errors[:10]:
        print("  !", e)
    ok = len(opened) == a.sessions and not errors and lat and pct(lat, 0.99) < 250
    print("result:", "ok" if ok else "MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
