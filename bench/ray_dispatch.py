"""Benchmark: what Ray mode costs per call, and mock-mode episode throughput against the nodes.

Starts its own local Ray cluster (loopback, each node `ray start --block` in its own session,
2 sandbox slots and 1 CPU each, torn down by PID at the end) and measures, in one run:

1. Dispatch overhead: the same request through ``RaySandbox`` (inner mock, one node) and on
   the local ``MockSandbox``, alternately, round by round (the machine is noisy): ``pwd``
   (the easiest request), each task's run command (a recorded run replayed, the whole
   workspace shipped both ways) and the verification of each task's fixed workspace.
   Medians per request kind and the median of per-call ratios (ray / local).
2. Throughput: oracle episodes through the eval runner over the cluster with 1, 2 and 4 nodes
   (concurrency = the cluster's slots), next to the local mock at the same concurrency, with
   the driver's CPU use (process time / wall, in cores) and how busy the whole machine was
   (/proc/stat, everyone's work included): where the driver nears one core, the coordinator
   (one Python process dispatching every call) is the limit; where the machine is full, the
   nodes share its cores and adding nodes on it cannot help.

    python bench/ray_dispatch.py [--rounds 5] [--nodes 1,2,4] [--seeds 50] [--json FILE]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sandbox_env.eval import OracleAgent, run_eval  # noqa: E402
from sandbox_env.eval.runner import EvalConfig  # noqa: E402
from sandbox_env.models import Limits  # noqa: E402
from sandbox_env.rubrics import default_judge  # noqa: E402
from sandbox_env.sandbox.mock import MockSandbox  # noqa: E402
from sandbox_env.sandbox.ray_backend import ADDRESS_ENV, INNER_ENV, SLOT_RESOURCE  # noqa: E402
from sandbox_env.sandbox.ray_backend.sandbox import RaySandbox  # noqa: E402
from sandbox_env.suite.tasks import TaskRegistry, TaskSpec  # noqa: E402
from sandbox_env.workspace import Workspace, apply_patch  # noqa: E402

BIN = Path(sys.executable).parent
SLOTS = 2


class LocalCluster:
    """Ray nodes on loopback, each a `ray start --block` session killed by PID at the end."""

    def __init__(self) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = int(s.getsockname()[1])
        self.address = f"127.0.0.1:{self.port}"
        self.tmp = Path(tempfile.mkdtemp(prefix="rb"))  # short: Ray's socket paths
        self.nodes: list[subprocess.Popen[bytes]] = []
        self.env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}

    def add(self) -> None:
        head = not self.nodes
        args = [str(BIN / "ray"), "start", "--block", "--node-ip-address", "127.0.0.1", "--num-cpus", "1",
                "--resources", json.dumps({SLOT_RESOURCE: SLOTS}), "--object-store-memory", "80000000",
                "--disable-usage-stats"]
        args += (["--head", "--port", str(self.port), "--include-dashboard=false",
                  "--temp-dir", str(self.tmp / "ray")] if head else ["--address", self.address])
        log = (self.tmp / f"node{len(self.nodes)}.log").open("wb")
        self.nodes.append(subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=self.env,
                                           start_new_session=True))
        self._wait_slots(SLOTS * len(self.nodes))

    def _wait_slots(self, n: int, timeout: float = 120) -> None:
        probe = ("import sys, ray\n"
                 "ray.init(address=sys.argv[1], log_to_driver=False, logging_level='ERROR')\n"
                 f"print(int(sum(x['Resources'].get('{SLOT_RESOURCE}', 0) "
                 "for x in ray.nodes() if x['Alive'])))")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            out = subprocess.run([sys.executable, "-c", probe, self.address], check=False,
                                 capture_output=True, text=True, timeout=60, env=self.env).stdout.strip()
            if out == str(n):
                return
            time.sleep(1)
        raise RuntimeError(f"the cluster did not reach {n} slots; logs in {self.tmp}")

    def stop(self) -> None:
        """Every process of every node's session, by PID (Ray's workers have process groups of
        their own, so a process group kill would miss them)."""
        for p in reversed(self.nodes):
            for sig in (signal.SIGSTOP, signal.SIGKILL):
                out = subprocess.run(["ps", "-eo", "pid=,sid="], check=False, capture_output=True,
                                     text=True).stdout
                for line in out.splitlines():
                    pid, sid = (int(x) for x in line.split())
                    if sid == p.pid:
                        try:
                            os.kill(pid, sig)
                        except ProcessLookupError:
                            pass
            p.wait(timeout=30)


NOVEL = "novel"  # a files marker: this request's workspace gets a statement never seen before


def requests(tasks: TaskRegistry) -> list[tuple[str, TaskSpec, str | None, dict[str, str]]]:
    """(kind, task, command or None for a verification, workspace files) of one round: the
    easiest request, the recorded states (an exact trace lookup) and an agent's novel edit
    (no recording matches: the mock's syntax check and static classifier do the work)."""
    out: list[tuple[str, TaskSpec, str | None, dict[str, str]]] = []
    for task in tasks:
        files = task.repo_files()
        fixed = apply_patch(files, task.solution_patch)
        out.append(("pwd", task, "pwd", files))
        out.append(("run recorded", task, task.run_command, files))
        out.append(("verify recorded", task, None, fixed))
        out.append(("run novel edit", task, task.run_command, {**files, NOVEL: ""}))
        out.append(("verify novel edit", task, None, {**fixed, NOVEL: ""}))
    return out


_novel = iter(range(10**9))


def _workspace(task: TaskSpec, files: dict[str, str]) -> Workspace:
    if NOVEL in files:  # a harmless assignment, unique per call, in the first signal file
        files = dict(files)
        del files[NOVEL]
        target = (task.signal_files or sorted(p for p in files if p.endswith(".py")))[0]
        files[target] = files[target] + f"\n_bench_edit = {next(_novel)}\n"
    ws = Workspace(task.repo_files())
    ws.sync(files)
    return ws


def one_call(sbx: object, task: TaskSpec, command: str | None, files: dict[str, str]) -> float:
    ws = _workspace(task, files)
    t = time.perf_counter()
    if command is None:
        v = sbx.verify(ws, task)  # type: ignore[attr-defined]
        assert v.outcome.value != "infra_error", v.reasons
    else:
        r = sbx.run(ws, command, Limits(), task)  # type: ignore[attr-defined]
        assert r.outcome.value != "infra_error", r.output
    return time.perf_counter() - t


def dispatch(tasks: TaskRegistry, rounds: int) -> dict[str, dict[str, float]]:
    """Per request kind: local and ray medians (ms) and the median per-call ratio."""
    local, ray_sbx = MockSandbox(), RaySandbox.create(owner="bench-dispatch")
    times: dict[str, dict[str, list[float]]] = {}
    try:
        reqs = requests(tasks)
        for task, command, files in [(t, c, f) for _, t, c, f in reqs]:  # warm both (caches, imports)
            one_call(local, task, command, files)
            one_call(ray_sbx, task, command, files)
        for i in range(rounds):
            for kind, task, command, files in reqs:
                d = times.setdefault(kind, {"local": [], "ray": []})
                order = [("local", local), ("ray", ray_sbx)]
                for name, sbx in order if i % 2 == 0 else order[::-1]:
                    d[name].append(one_call(sbx, task, command, files))
            print(f"dispatch round {i + 1}/{rounds}", flush=True)
    finally:
        ray_sbx.close()
    out = {}
    for kind, d in times.items():
        out[kind] = {"local_ms": 1000 * statistics.median(d["local"]),
                     "ray_ms": 1000 * statistics.median(d["ray"]),
                     "ratio": statistics.median(r / q for r, q in zip(d["ray"], d["local"], strict=True)),
                     "calls": len(d["ray"])}
    return out


def _busy_jiffies() -> tuple[int, int]:
    """(busy, total) CPU jiffies of the whole machine so far (/proc/stat; others' jobs too)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


def episodes(sbx: object, tasks: TaskRegistry, seeds: int, k: int, mode: str) -> dict[str, float]:
    """Oracle episodes of every task and ``seeds`` seeds at concurrency ``k``: episodes/s, the
    driver's CPU (cores) and how busy the whole machine was meanwhile (0..1)."""
    with tempfile.TemporaryDirectory() as out:
        cfg = EvalConfig(agent="oracle", seeds=list(range(seeds)), concurrency=k, mode=mode,
                         out=Path(out), progress=False)
        w0, c0, (b0, t0) = time.perf_counter(), time.process_time(), _busy_jiffies()
        res = run_eval(cfg, tasks, OracleAgent(), sandbox=sbx, judge=default_judge(),  # type: ignore[arg-type]
                       emit=lambda *_: None)
        wall, cpu, (b1, t1) = time.perf_counter() - w0, time.process_time() - c0, _busy_jiffies()
    assert res.statuses["ok"] == res.planned, res.statuses
    return {"episodes": res.planned, "wall_s": wall, "per_s": res.planned / wall, "driver_cpu": cpu / wall,
            "machine_busy": (b1 - b0) / max(1, t1 - t0)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5, help="dispatch rounds (every request of every task)")
    ap.add_argument("--nodes", default="1,2,4", help="cluster sizes for the throughput part")
    ap.add_argument("--seeds", type=int, default=50, help="seeds per task in each throughput eval")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    a = ap.parse_args()
    sizes = sorted({int(n) for n in a.nodes.split(",")})
    tasks = TaskRegistry()
    cluster = LocalCluster()
    os.environ[ADDRESS_ENV], os.environ[INNER_ENV] = cluster.address, "mock"
    figures: dict[str, object] = {"date": datetime.datetime.now(datetime.UTC).isoformat(timespec="minutes"),
                                  "host": platform.node(), "cpus": os.cpu_count(), "slots_per_node": SLOTS,
                                  "python": platform.python_version()}
    try:
        cluster.add()
        figures["dispatch"] = dispatch(tasks, a.rounds)
        rows = []
        for n in sizes:
            while len(cluster.nodes) < n:
                cluster.add()
            k = SLOTS * n
            local = episodes(MockSandbox(), tasks, a.seeds, k, "mock")
            sbx = RaySandbox.create(owner=f"bench-{n}")
            try:
                assert len(sbx.nodes()) == n, sbx.nodes()
                ray_row = episodes(sbx, tasks, a.seeds, k, "ray")
            finally:
                sbx.close()
            rows.append({"nodes": n, "concurrency": k, "ray": ray_row, "local": local})
            print(f"{n} node(s), concurrency {k}: ray {ray_row['per_s']:.1f} episodes/s "
                  f"(driver {ray_row['driver_cpu']:.2f} cores, machine {ray_row['machine_busy']:.0%} busy), "
                  f"local mock {local['per_s']:.1f}/s", flush=True)
        figures["throughput"] = rows
    finally:
        cluster.stop()

    print(f"\n{figures['date']} on {figures['host']} ({figures['cpus']} CPUs), Python {figures['python']}")
    print("\ndispatch (one node, inner mock; medians over rounds x tasks)")
    print(f"  {'request':18s} {'local ms':>9s} {'ray ms':>9s} {'ray/local':>10s} {'ray - local':>12s}")
    for kind, d in figures["dispatch"].items():  # type: ignore[attr-defined]
        print(f"  {kind:18s} {d['local_ms']:9.2f} {d['ray_ms']:9.2f} {d['ratio']:9.1f}x "
              f"{d['ray_ms'] - d['local_ms']:9.2f} ms")
    print(f"\nthroughput (oracle episodes, mock, {SLOTS} slots per node)")
    print(f"  {'nodes':>5s} {'K':>3s} {'ray ep/s':>9s} {'driver cores':>13s} {'machine busy':>13s} "
          f"{'local ep/s':>11s}")
    for r in rows:
        ray_row, local = r["ray"], r["local"]
        print(f"  {r['nodes']:5d} {r['concurrency']:3d} {ray_row['per_s']:9.1f} "
              f"{ray_row['driver_cpu']:13.2f} {ray_row['machine_busy']:12.0%} {local['per_s']:11.1f}")
    if a.json:
        a.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
