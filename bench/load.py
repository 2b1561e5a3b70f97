"""Bounded load test (loopback only, stops by itself): many concurrent episodes, cross-talk checks.

Phase 1: 32 concurrent mock episodes for --seconds (half over HTTP, half over /ws), each
looping: reset, mark its own workspace with a unique file, check that a command and the diff
see that mark and no other, then play the task's reference fix or give up, and check its
score matches its own play. Phase 2 (skipped with --no-docker or without an engine): 4
concurrent docker episodes of the reference fix, in real containers. For each phase: errors,
cross-talk findings, p50/p99 step latency, steps, and the server's RSS before and after.

    python bench/load.py [--seconds 60] [--clients 32] [--docker-episodes 4] [--no-docker]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from websockets.asyncio.client import connect as ws_connect

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sandbox_env.suite.oracle import oracle_actions  # noqa: E402
from sandbox_env.suite.tasks import TaskRegistry  # noqa: E402


@dataclass
class Stats:
    latencies: list[float] = field(default_factory=list)
    episodes: int = 0
    errors: list[str] = field(default_factory=list)
    crosstalk: list[str] = field(default_factory=list)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def start_server(mode: str, clients: int) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "sandbox_env.cli", "serve", "--mode", mode, "--port",
                             str(port), "--log-level", "warning", "--max-sessions", str(clients + 4),
                             "--owner", f"bench-load-{mode}"], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/health", timeout=2).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("server did not start")


class Http:
    def __init__(self, url: str) -> None:
        self.c = httpx.AsyncClient(base_url=url, timeout=900)
        self.eid: str | None = None

    async def reset(self, task: str) -> dict[str, Any]:
        r = await self.c.post("/reset", json={"task": task})
        r.raise_for_status()
        self.eid = r.json()["episode_id"]
        return r.json()

    async def step(self, action: dict[str, Any]) -> dict[str, Any]:
        r = await self.c.post("/step", json={"action": action, "episode_id": self.eid})
        r.raise_for_status()
        return r.json()

    async def close(self) -> None:
        if self.eid:
            await self.c.post("/close", json={"episode_id": self.eid})
        await self.c.aclose()


class Ws:
    def __init__(self, url: str) -> None:
        self.url = url.replace("http://", "ws://") + "/ws"
        self.ws: Any = None

    async def _ask(self, msg: dict[str, Any]) -> dict[str, Any]:
        if self.ws is None:
            self.ws = await ws_connect(self.url, max_size=None)
        await self.ws.send(json.dumps(msg))
        reply = json.loads(await self.ws.recv())
        if reply["type"] == "error":
            raise RuntimeError(reply["data"])
        return reply["data"]

    async def reset(self, task: str) -> dict[str, Any]:
        return await self._ask({"type": "reset", "data": {"task": task}})

    async def step(self, action: dict[str, Any]) -> dict[str, Any]:
        return await self._ask({"type": "step", "data": action})

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()


async def episode(ep: Http | Ws, i: int, n: int, *, task: Any, stats: Stats, run: str) -> None:
    """One episode that must see only its own mark and earn only its own score."""
    await ep.reset(task.id)
    mark = f"owner_{i}_{n}.txt"

    async def step(a: dict[str, Any]) -> dict[str, Any]:
        t = time.perf_counter()
        res = await ep.step(a)
        stats.latencies.append(time.perf_counter() - t)
        return res

    await step({"action_type": "edit_file", "filename": mark, "old_str": "", "new_str": f"mark {i}.{n}\n"})
    out = (await step({"action_type": "execute_bash", "command": run.format(mark=mark)}))["observation"]
    seen = re.findall(r"mark (\d+\.\d+)", out["terminal_output"])
    if seen != [f"{i}.{n}"]:
        stats.crosstalk.append(f"client {i} episode {n} saw marks {seen}")
    diff = (await step({"action_type": "view_git_diff"}))["observation"]["terminal_output"]
    if re.findall(r"owner_(\d+_\d+)", diff) != [f"{i}_{n}"]:
        stats.crosstalk.append(f"client {i} episode {n}: diff shows other marks")
    fix = n % 2 == 0
    actions = oracle_actions(task) if fix else [{"action_type": "submit_fix", "explanation": "gave up"}]
    res: dict[str, Any] = {}
    for a in actions:
        res = await step(a)
        if res["done"]:
            break
    verdict = res["observation"]["verdict"]
    if verdict is None or verdict["passed"] != fix:
        stats.crosstalk.append(f"client {i} episode {n}: verdict {verdict and verdict['passed']}, "
                               f"expected {fix}")
    stats.episodes += 1


async def client_loop(url: str, i: int, *, tasks: list[Any], until: float, stats: Stats, run: str,
                      max_episodes: int | None) -> None:
    n = 0
    while time.monotonic() < until and (max_episodes is None or n < max_episodes):
        ep: Http | Ws = Http(url) if i % 2 == 0 else Ws(url)
        try:
            await episode(ep, i, n, task=tasks[(i + n) % len(tasks)], stats=stats, run=run)
        except Exception as exc:
            stats.errors.append(f"client {i}: {type(exc).__name__}: {str(exc)[:200]}")
        finally:
            await ep.close()
        n += 1


def phase(name: str, mode: str, clients: int, *, seconds: float, tasks: list[Any], run: str,
          max_episodes: int | None = None) -> bool:
    proc, url = start_server(mode, clients)
    try:
        for t in tasks:  # warm the caches (task files, hashes), then free the session
            eid = httpx.post(url + "/reset", json={"task": t.id}).json()["episode_id"]
            httpx.post(url + "/close", json={"episode_id": eid}).raise_for_status()
        before = rss_mb(proc.pid)
        stats = Stats()
        t0 = time.monotonic()

        async def go() -> None:
            until = time.monotonic() + seconds
            await asyncio.gather(*(client_loop(url, i, tasks=tasks, until=until, stats=stats, run=run,
                                               max_episodes=max_episodes) for i in range(clients)))

        asyncio.run(go())
        wall = time.monotonic() - t0
        after = rss_mb(proc.pid)
        health = httpx.get(url + "/health").json()
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    lat = sorted(stats.latencies)
    p = (lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] * 1000) if lat else (lambda q: float("nan"))
    print(f"\n== {name}: {clients} clients ({mode}), {wall:.0f} s")
    print(f"episodes {stats.episodes}, steps {len(lat)}, errors {len(stats.errors)}, "
          f"cross-talk {len(stats.crosstalk)}, sessions left {health['active_sessions']}")
    print(f"step latency p50 {p(0.5):.1f} ms, p99 {p(0.99):.1f} ms, mean "
          f"{statistics.mean(lat) * 1000 if lat else float('nan'):.1f} ms")
    print(f"server RSS before {before:.0f} MB, after {after:.0f} MB ({after - before:+.0f} MB)")
    for line in (stats.errors + stats.crosstalk)[:10]:
        print("  !", line)
    return not stats.errors and not stats.crosstalk and health["active_sessions"] == 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--docker-episodes", type=int, default=4)
    ap.add_argument("--no-docker", action="store_true")
    a = ap.parse_args()
    os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")
    tasks = list(TaskRegistry())
    ok = phase("mock", "mock", a.clients, seconds=a.seconds, tasks=tasks, run="cat {mark}")
    if not a.no_docker:
        from sandbox_env.sandbox import docker_available

        up, why = docker_available()
        if up:
            ok &= phase("docker", "docker", a.docker_episodes, seconds=3600, tasks=tasks, run="cat {mark}",
                        max_episodes=1)
        else:
            print(f"\n== docker: skipped ({why})")
    print("\nresult:", "ok" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
