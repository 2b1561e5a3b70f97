"""Benchmark: mock-mode steps/s and p50/p99 step latency over HTTP and /ws vs the framework floor.

Three targets, measured alternately in one run (the machine is noisy), each with 1 and 16
concurrent clients: (a) bench/floor_app.py, a FastAPI app answering /reset and /step with
fixed replies the size of real ones; (b) this server over HTTP; (c) this server over /ws.
Every client plays episodes of read_file steps (a reset when the step budget nears its end),
so the observations carry a file as real ones do. The HTTP client is a minimal keep-alive
HTTP/1.1 client on asyncio streams so that the client costs less than the servers it measures.

Targets (benchmark, not test): HTTP >= 0.9x the floor with 1 client; /ws >= 3x this server's
HTTP rate with 1 client; 16 clients >= 2x the 1-client rate.

    python bench/http_ws_throughput.py [--seconds 1.5] [--rounds 7]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx
from websockets.asyncio.client import connect as ws_connect

ROOT = Path(__file__).resolve().parent.parent
TASK = "oom_graph_leak"
STEPS_PER_EPISODE = 10  # under the task's budget of 12: a reset starts the next episode
READ = {"action_type": "read_file", "filename": "train.py"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(argv: list[str], port: int) -> subprocess.Popen:
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            httpx.post(f"http://127.0.0.1:{port}/reset", json={"task": TASK}, timeout=2)
            return proc
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError(f"{argv} did not start")


class RawHttp:
    """Keep-alive HTTP/1.1 POSTs of JSON bodies; just enough protocol for these two servers."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.reader: asyncio.StreamReader
        self.writer: asyncio.StreamWriter

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)

    async def post(self, path: str, body: dict) -> bytes:
        data = json.dumps(body).encode()
        self.writer.write(b"POST %s HTTP/1.1\r\nhost: bench\r\ncontent-type: application/json\r\n"
                          b"content-length: %d\r\n\r\n%s" % (path.encode(), len(data), data))
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length:"))
        payload = await self.reader.readexactly(length)
        if status != 200:
            raise RuntimeError(f"{path}: HTTP {status} {payload[:200]!r}")
        return payload

    async def close(self) -> None:
        self.writer.close()


async def http_client(port: int, until: float, lat: list[float]) -> int:
    c = RawHttp(port)
    await c.open()
    steps = 0
    while time.perf_counter() < until:
        eid = json.loads(await c.post("/reset", {"task": TASK}))["episode_id"]
        for _ in range(STEPS_PER_EPISODE):
            t = time.perf_counter()
            await c.post("/step", {"action": READ, "episode_id": eid})
            lat.append(time.perf_counter() - t)
            steps += 1
        await c.post("/close", {"episode_id": eid})
    await c.close()
    return steps


async def ws_client(port: int, until: float, lat: list[float]) -> int:
    steps = 0
    reset = json.dumps({"type": "reset", "data": {"task": TASK}})
    step = json.dumps({"type": "step", "data": READ})
    async with ws_connect(f"ws://127.0.0.1:{port}/ws", max_size=None) as ws:
        while time.perf_counter() < until:
            await ws.send(reset)
            await ws.recv()
            for _ in range(STEPS_PER_EPISODE):
                t = time.perf_counter()
                await ws.send(step)
                reply = await ws.recv()
                lat.append(time.perf_counter() - t)
                if reply[:16] == '{"type":"error"':
                    raise RuntimeError(reply[:300])
                steps += 1
    return steps


async def floor_client(port: int, until: float, lat: list[float]) -> int:
    """The floor has no sessions: same requests, no episode bookkeeping to follow."""
    c = RawHttp(port)
    await c.open()
    steps = 0
    while time.perf_counter() < until:
        await c.post("/reset", {"task": TASK})
        for _ in range(STEPS_PER_EPISODE):
            t = time.perf_counter()
            await c.post("/step", {"action": READ, "episode_id": "floor"})
            lat.append(time.perf_counter() - t)
            steps += 1
        await c.post("/reset", {"task": TASK})  # stands in for /close: same request count
    await c.close()
    return steps


Client = Callable[[int, float, list[float]], Awaitable[int]]


async def measure(client: Client, port: int, clients: int, seconds: float) -> tuple[float, list[float]]:
    lat: list[float] = []
    t0 = time.perf_counter()
    until = t0 + seconds
    steps = sum(await asyncio.gather(*(client(port, until, lat) for _ in range(clients))))
    return steps / (time.perf_counter() - t0), lat


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))] * 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=1.5, help="length of one measurement window")
    ap.add_argument("--rounds", type=int, default=7, help="windows per target and client count")
    a = ap.parse_args()
    fport, sport = free_port(), free_port()
    # deflate off, as `sandbox-env serve` serves: compressing each frame costs more than it saves
    uv = [sys.executable, "-m", "uvicorn", "--log-level", "warning", "--no-access-log",
          "--ws-per-message-deflate", "false"]
    floor = start([*uv, "bench.floor_app:app", "--port", str(fport)], fport)
    server = start([sys.executable, "-m", "sandbox_env.cli", "serve", "--mode", "mock", "--port", str(sport),
                    "--log-level", "warning", "--max-sessions", "64"], sport)
    targets: list[tuple[str, Client, int]] = [("floor http", floor_client, fport),
                                              ("server http", http_client, sport),
                                              ("server ws", ws_client, sport)]
    rates: dict[tuple[str, int], list[float]] = {}
    lats: dict[tuple[str, int], list[float]] = {}
    try:
        for _, client, port in targets:  # warm-up: imports, caches, lazy paths
            asyncio.run(measure(client, port, 4, 1.0))
        for r in range(a.rounds):  # the targets alternate window by window, in rotating order
            for clients in (1, 16):
                for name, client, port in targets[r % 3:] + targets[:r % 3]:
                    rate, lat = asyncio.run(measure(client, port, clients, a.seconds))
                    rates.setdefault((name, clients), []).append(rate)
                    lats.setdefault((name, clients), []).extend(lat)
    finally:
        for p in (floor, server):
            p.terminate()
            p.wait(timeout=10)
    print(f"{'target':12s} {'clients':>7s} {'steps/s':>9s} {'p50 ms':>8s} {'p99 ms':>8s}   "
          f"(median of {a.rounds} windows of {a.seconds:g} s)")
    for (name, clients), rs in sorted(rates.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        lat = lats[(name, clients)]
        print(f"{name:12s} {clients:7d} {statistics.median(rs):9.0f} "
              f"{pct(lat, 0.5):8.2f} {pct(lat, 0.99):8.2f}")

    def ratio(x: tuple[str, int], y: tuple[str, int]) -> float:
        """Median over rounds of the ratio of windows measured next to each other."""
        return statistics.median(p / q for p, q in zip(rates[x], rates[y], strict=True))

    checks = [
        ("HTTP vs floor, 1 client", ratio(("server http", 1), ("floor http", 1)), 0.9),
        ("/ws vs HTTP, 1 client", ratio(("server ws", 1), ("server http", 1)), 3.0),
        ("HTTP 16 vs 1 clients", ratio(("server http", 16), ("server http", 1)), 2.0),
        ("/ws 16 vs 1 clients", ratio(("server ws", 16), ("server ws", 1)), 2.0),
    ]
    print()
    for label, value, target in checks:
        print(f"{label:26s} {value:6.2f}x  (target >= {target}x)  {'ok' if value >= target else 'MISSED'}")


if __name__ == "__main__":
    main()
