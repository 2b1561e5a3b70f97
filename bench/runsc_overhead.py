"""Benchmark: the cost of gVisor (runsc) against runc for sandbox containers.

Measured alternately in one run (runc, runsc, runc, ... : the machine is noisy), medians and
runsc/runc ratios reported:

- container start: create + start + wait + remove of `true` (network none);
- `import torch` in a bare container;
- each task's reproduction (`run_command` of the unfixed repo through DockerSandbox.run)
  and verification of its reference fix (DockerSandbox.verify), one sandbox per runtime.

Needs runsc registered with the engine (bash scripts/runsc.sh). Prints a Markdown table;
``--out FILE`` also writes it.

    python bench/runsc_overhead.py [--rounds 3] [--task oom_graph_leak ...] [--no-tasks]
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import docker

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sandbox_env.sandbox.docker import RUNNER_IMAGE, DockerSandbox  # noqa: E402
from sandbox_env.suite.tasks import TaskRegistry  # noqa: E402
from sandbox_env.workspace import Workspace  # noqa: E402

RUNTIMES = ("runc", "runsc")
OWNER = "bench-runsc"


def bare(client: docker.DockerClient, runtime: str, command: list[str]) -> float:
    """Seconds for create + start + wait + logs + remove of ``command``."""
    t = time.perf_counter()
    ct = client.containers.create(RUNNER_IMAGE, command, runtime=runtime, network_mode="none",
                                  user="1000", working_dir="/tmp", labels={"sandbox-env.owner": OWNER})
    try:
        ct.start()
        code = ct.wait(timeout=300)["StatusCode"]
        ct.logs()
    finally:
        ct.remove(force=True)
    if code != 0:
        raise RuntimeError(f"{command} exited {code} under {runtime}")
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--task", action="append", help="tasks to time (default: all)")
    ap.add_argument("--no-tasks", action="store_true", help="only container start and import torch")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    client = docker.from_env(timeout=120)
    registry = TaskRegistry()
    tasks = [] if a.no_tasks else [registry.get(t) for t in a.task] if a.task else list(registry)
    sandboxes = {rt: DockerSandbox(owner=f"{OWNER}-{rt}", pool_size=1, runtime=rt)
                 for rt in RUNTIMES} if tasks else {}
    probes: dict[str, Callable[[str], float]] = {
        "container start (`true`)": lambda rt: bare(client, rt, ["true"]),
        "`import torch`": lambda rt: bare(client, rt, ["python", "-c", "import torch"]),
    }
    for task in tasks:
        def repro(rt: str, task=task) -> float:  # type: ignore[no-untyped-def]
            res = sandboxes[rt].run(Workspace(task.repo_files()), task.run_command, task.limits, task)
            if res.outcome.value in ("passed", "infra_error"):
                raise RuntimeError(f"{task.id} did not reproduce under {rt}: {res.output[-500:]}")
            return res.duration_s

        def verify(rt: str, task=task) -> float:  # type: ignore[no-untyped-def]
            ws = Workspace(task.repo_files())
            ws.apply_patch(task.solution_patch)
            t = time.perf_counter()
            v = sandboxes[rt].verify(ws, task)
            if not v.passed:
                raise RuntimeError(f"{task.id} fix not verified under {rt}: {v.reasons}")
            return time.perf_counter() - t

        probes[f"{task.id} reproduction"] = repro
        probes[f"{task.id} verification (fix)"] = verify
    times: dict[str, dict[str, list[float]]] = {k: {rt: [] for rt in RUNTIMES} for k in probes}
    started = time.perf_counter()
    try:
        for i in range(a.rounds):
            for name, fn in probes.items():
                order = RUNTIMES if i % 2 == 0 else RUNTIMES[::-1]
                for rt in order:
                    times[name][rt].append(fn(rt))
                print(f"round {i + 1}/{a.rounds} {name}: " +
                      ", ".join(f"{rt} {times[name][rt][-1]:.2f}s" for rt in RUNTIMES), flush=True)
    finally:
        for s in sandboxes.values():
            s.close()
    lines = [f"Measured {datetime.date.today().isoformat()} by `python bench/runsc_overhead.py "
             f"--rounds {a.rounds}` ({(time.perf_counter() - started) / 60:.1f} min), medians of "
             f"{a.rounds} alternating rounds.", "",
             "| what | runc s | runsc s | runsc / runc |", "|---|---:|---:|---:|"]
    for name, by_rt in times.items():
        med = {rt: statistics.median(v) for rt, v in by_rt.items()}
        lines.append(f"| {name} | {med['runc']:.2f} | {med['runsc']:.2f} | "
                     f"{med['runsc'] / med['runc']:.2f}x |")
    table = "\n".join(lines)
    print("\n" + table)
    if a.out:
        a.out.write_text(table + "\n")


if __name__ == "__main__":
    main()
