"""Benchmark: execute_bash through the environment vs a bare container vs host Python.

Same image, same command, measured alternately in one run (the machine is noisy), medians
reported with ratios. Also reset latency. Targets (not tests): environment <= 1.15x bare
container; reset p50 < 20 ms.

    python bench/docker_overhead.py [--rounds 7] [--command "python -c 'import torch'"]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

import docker

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sandbox_env.environment import TriageEnvironment  # noqa: E402
from sandbox_env.sandbox.docker import RUNNER_IMAGE, DockerSandbox  # noqa: E402
from sandbox_env.suite.tasks import TaskRegistry  # noqa: E402

DEFAULT_CMD = "python -c 'import torch; x = torch.randn(256, 256); print(float((x @ x).sum()))'"


def bare_container(client: docker.DockerClient, command: str) -> float:
    t = time.perf_counter()
    ct = client.containers.run(RUNNER_IMAGE, ["bash", "-c", command], detach=True,
                               network_mode="none", user="1000", working_dir="/tmp")
    ct.wait()
    ct.logs()
    ct.remove(force=True)
    return time.perf_counter() - t


def host_python(command: str) -> float:
    t = time.perf_counter()
    subprocess.run(["bash", "-c", command.replace("python ", f"{sys.executable} ", 1)],
                   check=True, capture_output=True)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--command", default=DEFAULT_CMD)
    ap.add_argument("--task", default="oom_graph_leak")
    a = ap.parse_args()
    client = docker.from_env()
    tasks = TaskRegistry()
    sandbox = DockerSandbox(owner="bench-overhead", pool_size=2)
    env = TriageEnvironment(tasks, sandbox)
    env.reset(task=a.task)
    time.sleep(2)  # let the warm pool fill
    times: dict[str, list[float]] = {"environment": [], "bare container": [], "host python": []}
    resets: list[float] = []
    try:
        for i in range(a.rounds):
            t = time.perf_counter()
            obs = env.step({"action_type": "execute_bash", "command": a.command})
            times["environment"].append(time.perf_counter() - t)
            assert "exit code 0" in obs.terminal_output, obs.terminal_output[-500:]
            times["bare container"].append(bare_container(client, a.command))
            times["host python"].append(host_python(a.command))
            t = time.perf_counter()
            env.reset(task=a.task)
            resets.append(time.perf_counter() - t)
            print(f"round {i + 1}/{a.rounds}: " + ", ".join(f"{k} {v[-1]:.3f}s" for k, v in times.items()),
                  flush=True)
    finally:
        sandbox.close()
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"\ncommand: {a.command}")
    for k, v in med.items():
        print(f"  {k:15s} median {v:.3f}s")
    ratio = med["environment"] / med["bare container"]
    print(f"  environment / bare container = {ratio:.3f}x (target <= 1.15)")
    print(f"  bare container / host python = {med['bare container'] / med['host python']:.3f}x")
    p50, worst = statistics.median(resets) * 1000, max(resets) * 1000
    print(f"  reset p50 {p50:.1f} ms, max {worst:.1f} ms (target p50 < 20 ms)")


if __name__ == "__main__":
    main()
