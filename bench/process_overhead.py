"""Benchmark: one command in process mode vs a bare container vs the bare host.

The same command, measured alternately in one run (the machine is noisy): through
``ProcessSandbox.run`` (namespaces, init, copy in/out, rlimits), in a bare container of the
runner image (``docker run``-like through the SDK, network none, uid 1000), and with the
runner venv's interpreter on the host. Medians and the median of per-round ratios.

    python bench/process_overhead.py [--rounds 7] [--command "python -c 'import torch'"]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sandbox_env.models import Limits  # noqa: E402
from sandbox_env.runner_env import load  # noqa: E402
from sandbox_env.sandbox.process import ProcessSandbox  # noqa: E402
from sandbox_env.suite.tasks import TaskRegistry  # noqa: E402
from sandbox_env.workspace import Workspace  # noqa: E402

DEFAULT_CMD = "python -c 'import torch; x = torch.randn(256, 256); print(float((x @ x).sum()))'"


def bare_container(client: object, image: str, command: str) -> float:
    t = time.perf_counter()
    ct = client.containers.run(image, ["bash", "-c", command], detach=True,  # type: ignore[attr-defined]
                               network_mode="none", user="1000", working_dir="/tmp")
    ct.wait()
    ct.logs()
    ct.remove(force=True)
    return time.perf_counter() - t


def bare_host(python: str, command: str) -> float:
    t = time.perf_counter()
    subprocess.run(["bash", "-c", command.replace("python ", f"{python} ", 1)], check=True,
                   capture_output=True)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--command", default=DEFAULT_CMD)
    ap.add_argument("--task", default="oom_graph_leak")
    ap.add_argument("--no-docker", action="store_true")
    a = ap.parse_args()
    runner = load()
    assert runner is not None, "build the runner first: sandbox-env runner build"
    task = TaskRegistry().get(a.task)
    sbx = ProcessSandbox()
    client = image = None
    if not a.no_docker:
        import docker

        from sandbox_env.sandbox.docker import RUNNER_IMAGE

        client, image = docker.from_env(), RUNNER_IMAGE
    times: dict[str, list[float]] = {"process mode": [], "bare host": []}
    if client is not None:
        times["bare container"] = []
    try:
        for i in range(a.rounds):
            ws = Workspace(task.repo_files())  # the task's files are copied in and back, as in an episode
            t = time.perf_counter()
            res = sbx.run(ws, a.command, Limits(timeout_s=120), task)
            times["process mode"].append(time.perf_counter() - t)
            assert res.exit_code == 0, res.output[-500:]
            if client is not None:
                times["bare container"].append(bare_container(client, image or "", a.command))
            times["bare host"].append(bare_host(runner.python, a.command))
            print(f"round {i + 1}/{a.rounds}: " + ", ".join(f"{k} {v[-1]:.3f}s" for k, v in times.items()),
                  flush=True)
    finally:
        sbx.close()
    print(f"\ncommand: {a.command}")
    for k, v in times.items():
        print(f"  {k:15s} median {statistics.median(v):.3f}s")

    def ratio(x: str, y: str) -> float:
        return statistics.median(p / q for p, q in zip(times[x], times[y], strict=True))

    print(f"  process mode / bare host      = {ratio('process mode', 'bare host'):.3f}x")
    if client is not None:
        print(f"  process mode / bare container = {ratio('process mode', 'bare container'):.3f}x")
        print(f"  bare container / bare host    = {ratio('bare container', 'bare host'):.3f}x")


if __name__ == "__main__":
    main()
