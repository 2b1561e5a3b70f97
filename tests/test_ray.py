"""Ray mode on a real local cluster: a head and two worker nodes on loopback, mock inner backend.

One module-scoped cluster (each node `ray start --block` in its own session; a node is frozen
and killed by the PIDs of its whole session, workers included, which Ray puts in process groups
of their own): a run and a verification cross the cluster unchanged; a worker node frozen while
it holds two verifications of an eval, then killed, turns exactly those two episodes into
infra errors (not scored), which a rerun into the same --out retries on the survivors to the
fault-free summary; a node that joins later takes work; closing the sandbox or killing its
driver leaves no sandbox actor running; SANDBOX_ENV_RAY_ADDRESS alone puts the TRL adapter and
the ASGI app on the cluster, and without it they import no Ray; a docker-marked sample runs
docker inside the nodes and checks the owner@node labels and that a killed driver, a lost node
and closing leave no container once the reapers ran. Budget: about 2.5 minutes on 2 loaded
cores (the docker sample 20 to 35 s of it).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

if os.environ.get("CI") == "true":  # CI installs the extra: a missing ray is a failure there
    import ray
else:
    ray = pytest.importorskip("ray", reason="pip install 'sandbox-env[ray]'")

from sandbox_env.environment import FREE_INFRA_ERRORS
from sandbox_env.eval import OracleAgent, read_records, run_eval, write_summary
from sandbox_env.eval.records import EPISODES_FILE, latest
from sandbox_env.eval.runner import EvalConfig
from sandbox_env.models import Limits, Outcome, RunResult, Verdict
from sandbox_env.rubrics import EFFICIENCY_WEIGHT
from sandbox_env.sandbox.mock import MockSandbox
from sandbox_env.sandbox.ray_backend import ADDRESS_ENV, INNER_ENV
from sandbox_env.sandbox.ray_backend.sandbox import RaySandbox
from sandbox_env.suite.tasks import TaskRegistry, TaskSpec
from sandbox_env.workspace import Workspace

BIN = Path(sys.executable).parent
# node death is noticed in ~6 s instead of ~30 s (read by the head's GCS)
FAST_HEALTH = {"RAY_health_check_period_ms": "1000", "RAY_health_check_failure_threshold": "6",
               "RAY_health_check_initial_delay_ms": "1000"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


_FACES = """
import sys
from sandbox_env.server import asgi, app
from sandbox_env import cli, trl
from sandbox_env.eval import runner
env = trl.TriageToolEnv()
env.reset(task=sys.argv[1], seed=0)
first = env.execute_bash(command="pwd").splitlines()[0]
trl_mode = trl._shared_parts["sandbox"].mode
trl._shared_parts["sandbox"].close()  # one driver at a time: its actors hold every node's slots
sandbox = asgi.app.state.sandbox
print(trl_mode, sandbox.mode, "ray" in sys.modules, flush=True)
print(first, flush=True)
sandbox.close()
"""


def _faces(env: dict[str, str]) -> list[str]:
    """The TRL adapter and the ASGI app configured by ``env`` alone, in a fresh interpreter:
    their sandboxes' modes, whether Ray was imported, and one tool call's first line."""
    task = next(iter(TaskRegistry())).id
    env = {k: v for k, v in env.items() if not k.startswith(("SANDBOX_ENV_", "ENV_URL"))} | {
        k: v for k, v in env.items() if k in (ADDRESS_ENV, INNER_ENV)}
    p = subprocess.run([sys.executable, "-c", _FACES, task], check=False, capture_output=True, text=True,
                       timeout=120, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout.splitlines()


def test_without_the_address_nothing_imports_ray() -> None:
    env = {k: v for k, v in os.environ.items() if k not in (ADDRESS_ENV, INNER_ENV)}
    assert _faces(env)[0] == "mock mock False"


class Cluster:
    """Nodes started by this test, each a `ray start --block` process group."""

    def __init__(self) -> None:
        self.port = _free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.tmp = Path(tempfile.mkdtemp(prefix="rt"))  # short: Ray's socket paths
        self.nodes: list[subprocess.Popen[bytes]] = []
        self.env = {**os.environ, **FAST_HEALTH, "RAY_USAGE_STATS_ENABLED": "0"}

    def start(self, *, head: bool = False, slots: int = 2) -> subprocess.Popen[bytes]:
        args = [str(BIN / "ray"), "start", "--block", "--node-ip-address", "127.0.0.1", "--num-cpus", "1",
                "--resources", json.dumps({"sandbox_slots": slots}), "--object-store-memory", "80000000",
                "--disable-usage-stats"]
        args += (["--head", "--port", str(self.port), "--include-dashboard=false",
                  "--temp-dir", str(self.tmp / "ray")] if head else ["--address", self.address])
        log = (self.tmp / f"node{len(self.nodes)}.log").open("wb")
        p = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=self.env, start_new_session=True)
        self.nodes.append(p)
        return p

    def alive_slots(self) -> int:
        out = subprocess.run([sys.executable, "-c", _COUNT, self.address], check=False, capture_output=True,
                             text=True,
                             timeout=60, env=self.env)
        return int(out.stdout.strip() or 0)

    def wait_slots(self, n: int, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.alive_slots() == n:
                return
            time.sleep(2)
        raise AssertionError(f"the cluster did not reach {n} slots; logs in {self.tmp}")

    def signal_node(self, p: subprocess.Popen[bytes], sig: int) -> list[int]:
        """Send ``sig`` to every process of a node: its session (the raylet, the GCS, and the
        workers, which Ray puts in process groups of their own), by PID, until none is new."""
        hit: set[int] = set()
        for _ in range(20):
            new = [pid for pid in _session(p.pid) if pid not in hit]
            if not new:
                break
            for pid in new:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
                hit.add(pid)
        return sorted(hit)

    def kill(self, p: subprocess.Popen[bytes]) -> None:
        self.signal_node(p, signal.SIGSTOP)  # nothing of it forks or restarts while it dies
        self.signal_node(p, signal.SIGKILL)
        p.wait(timeout=30)
        deadline = time.monotonic() + 10
        while _session(p.pid) and time.monotonic() < deadline:  # zombies reaped by their parents
            time.sleep(0.1)

    def stop(self) -> None:
        """Every node's process group, killed (a SIGTERMed node drains for 30 s)."""
        for p in reversed(self.nodes):
            self.kill(p)


_COUNT = """
import sys, ray
ray.init(address=sys.argv[1], log_to_driver=False, logging_level="ERROR")
print(int(sum(n["Resources"].get("sandbox_slots", 0) for n in ray.nodes() if n["Alive"])))
"""


def _session(sid: int) -> list[int]:
    """The live processes of session ``sid`` (a node started with start_new_session)."""
    out = subprocess.run(["ps", "-eo", "pid=,sid=,stat="], check=False, capture_output=True, text=True).stdout
    return [int(f[0]) for f in (line.split() for line in out.splitlines())
            if len(f) == 3 and int(f[1]) == sid and not f[2].startswith("Z")]


def _sandbox_actor_processes() -> int:
    out = subprocess.run(["ps", "-eo", "args"], check=False, capture_output=True, text=True).stdout
    return sum(1 for line in out.splitlines() if line.startswith("ray::NodeSandbox"))


def _wait_no_actors(timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while _sandbox_actor_processes() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _sandbox_actor_processes() == 0


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    c = Cluster()
    try:
        c.start(head=True)
        c.wait_slots(2)
        c.start()  # one at a time: two nodes starting at once time out on a loaded 2-core host
        c.wait_slots(4)
        c.start()
        c.wait_slots(6)
        yield c
    finally:
        if ray.is_initialized():  # a driver still attached exits by itself once the nodes are gone
            ray.shutdown()
        c.stop()



@pytest.fixture
def ray_env(cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> Cluster:
    monkeypatch.setenv(ADDRESS_ENV, cluster.address)
    monkeypatch.setenv(INNER_ENV, "mock")
    return cluster


def test_run_and_verify_cross_the_cluster_unchanged(ray_env: Cluster) -> None:
    tasks = TaskRegistry()
    task = next(iter(tasks))
    sbx = RaySandbox.create(owner="t-roundtrip")
    try:
        assert sbx.mode == "ray" and sbx.provenance()["inner"] == "mock"
        local = MockSandbox()
        ws, ws_local = Workspace(task.repo_files()), Workspace(task.repo_files())
        cmd = task.run_command
        got, want = sbx.run(ws, cmd, Limits(), task), local.run(ws_local, cmd, Limits(), task)
        assert got == want and ws.files == ws_local.files
        assert sbx.verify(ws, task) == local.verify(ws_local, task)
        deadline = time.monotonic() + 20
        while len(sbx.nodes()) < 3 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert sorted(sbx.nodes().values()) == [2, 2, 2]  # one actor per node, holding its slots
    finally:
        sbx.close()
    _wait_no_actors()


def test_the_address_alone_puts_trl_and_the_asgi_app_on_the_cluster(cluster: Cluster) -> None:
    modes, first = _faces({**cluster.env, ADDRESS_ENV: cluster.address})
    assert modes == "ray ray True"
    assert first.startswith("$ pwd")  # the tool's run came back from a node
    _wait_no_actors()


def _eval(cluster: Cluster, out: Path) -> dict[str, object]:
    cmd = [str(BIN / "sandbox-env"), "eval", "--agent", "oracle", "--mode", "mock", "--ray", cluster.address,
           "--episodes", "3", "--concurrency", "6", "--no-progress", "--out", str(out)]
    p = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=180, env=cluster.env)
    assert p.returncode == 0, p.stdout + p.stderr
    return json.loads((out / "summary.json").read_text())


class _HeldVerifications:
    """The Ray sandbox with a gate on verifications: they wait until ``n`` wait, then go together.

    With every eval thread at the gate nothing else is in flight, so the ``n`` verifications
    released at once fill the cluster's ``n`` slots, two on each node: the frozen victim holds
    exactly its two (one, if a survivor's first one was back before the last left)."""

    def __init__(self, inner: RaySandbox, n: int) -> None:
        self.inner, self.n, self.mode = inner, n, inner.mode
        self.cond = threading.Condition()
        self.waiting, self.opened = 0, False

    def run(self, workspace: Workspace, command: str, limits: Limits, task: TaskSpec) -> RunResult:
        return self.inner.run(workspace, command, limits, task)

    def verify(self, workspace: Workspace, task: TaskSpec) -> Verdict:
        with self.cond:
            if not self.opened:
                self.waiting += 1
                self.cond.notify_all()
                assert self.cond.wait_for(lambda: self.opened, timeout=120)
        return self.inner.verify(workspace, task)

    def wait_full(self, timeout: float = 90) -> None:
        with self.cond:
            assert self.cond.wait_for(lambda: self.waiting >= self.n, timeout=timeout), self.waiting

    def open(self) -> None:
        with self.cond:
            self.opened = True
            self.cond.notify_all()

    def provenance(self) -> dict[str, object]:
        return self.inner.provenance()

    def close(self) -> None:
        self.inner.close()


def _scores(out: Path) -> dict[tuple[str, int], tuple[str, float | None, bool]]:
    recs = latest(read_records(out / EPISODES_FILE).records).values()
    return {(r.task, r.seed): (r.status, r.score, r.success) for r in recs}


def test_a_worker_killed_mid_eval_costs_retries_not_scores(ray_env: Cluster, tmp_path: Path) -> None:
    """The victim node is frozen while it holds verifications, then killed: those episodes
    are infra errors (not scored), the survivors finish the rest, a rerun into the same --out
    retries exactly those elsewhere, and the summary equals a fault-free run's."""
    tasks, seeds, k = TaskRegistry(), [0, 1, 2], 6
    n = len(list(tasks)) * len(seeds)  # episodes
    ref = tmp_path / "reference"  # the same eval, no cluster, no fault
    run_eval(EvalConfig(agent="oracle", seeds=seeds, concurrency=k, mode="mock", out=ref, progress=False),
             tasks, OracleAgent(), sandbox=MockSandbox(), emit=lambda *_: None)
    victim = ray_env.nodes[2]
    out = tmp_path / "eval"
    sbx = _HeldVerifications(RaySandbox.create(owner="t-killed"), n=k)
    try:
        by_pid = {n.info.pid: n.node_id for n in sbx.inner._nodes.values() if n.info}
        victim_node = next(by_pid[pid] for pid in _session(victim.pid) if pid in by_pid)
        assert sorted(sbx.inner.nodes().values()) == [2, 2, 2]
        done: list[object] = []
        cfg = EvalConfig(agent="oracle", seeds=seeds, concurrency=k, mode="ray", out=out, progress=False,
                         infra_retries=0)  # the rerun below retries them (in-run retries: test_eval)
        th = threading.Thread(target=lambda: done.append(run_eval(cfg, tasks, OracleAgent(), sandbox=sbx,  # type: ignore[arg-type]
                                                                  emit=lambda *_: None)))
        th.start()
        sbx.wait_full()  # the first six episodes all wait to be verified: nothing is in flight
        ray_env.signal_node(victim, signal.SIGSTOP)
        sbx.open()  # six verifications on six slots: the victim takes its two and holds them
        time.sleep(1.0)  # the survivors go on meanwhile
        # the victim's calls in flight: its verifications (2, unless a survivor was free again
        # first) and maybe a later episode's run, which fails as an infra run while its episode
        # goes on elsewhere (CI stop 22: held 2, lost 1)
        held = sbx.inner._nodes[victim_node].busy
        assert held >= 1
        ray_env.kill(victim)
        th.join(timeout=120)
        assert done and not th.is_alive()
        assert victim_node not in sbx.inner.nodes() and sbx.inner.dropped == 1
    finally:
        sbx.open()
        sbx.close()
    recs = read_records(out / EPISODES_FILE).records
    assert len(recs) == n
    lost = [r for r in recs if r.status == "infra_error"]
    assert 1 <= len(lost) <= held and all(r.status == "ok" for r in recs if r not in lost)
    held = len(lost)  # the episodes whose verification died with the victim
    for r in lost:  # not scored, and the failure names the node that died
        assert r.score is None and not r.success and r.verdict is None
        assert r.trajectory[-1].action_type == "submit_fix" and r.trajectory[-1].infra
        assert victim_node[:8] in (r.trajectory[-1].observation.last_action_error or "")  # type: ignore[union-attr]
    first = write_summary(out).agents["oracle"].overall
    assert (first.n, first.n_scored, first.n_infra_excluded) == (n, n - held, held)

    summary = _eval(ray_env, out)  # the rerun retries exactly the infra errors, on the survivors
    overall = summary["agents"]["oracle"]["overall"]  # type: ignore[index]
    assert overall["n"] == n and overall["n_scored"] == n and overall["n_infra_excluded"] == 0
    assert overall["success"]["rate"] == 1.0 and summary["n_superseded"] == held
    final = read_records(out / EPISODES_FILE).records
    assert len(final) == n + held
    assert {(r.task, r.seed) for r in final[n:]} == {(r.task, r.seed) for r in lost}
    assert all(r.status == "ok" for r in final[n:])
    # the summary is the fault-free one, episode by episode, but for a run the victim lost while
    # its episode went on elsewhere: infrastructure failures do not use a step, so that episode
    # scores exactly one step's efficiency more than its fault-free twin (CI stop 45)
    free = {(r.task, r.seed): EFFICIENCY_WEIGHT * min(r.infra_errors, FREE_INFRA_ERRORS) / r.max_steps
            for r in latest(final).values() if r.status == "ok"}
    got, fault_free = _scores(out), _scores(ref)
    assert got.keys() == fault_free.keys()
    for key, (status, score, ok) in fault_free.items():
        assert got[key][::2] == (status, ok) and score is not None
        assert got[key][1] == pytest.approx(score + free.get(key, 0.0)), key
    want = write_summary(ref).agents["oracle"].overall
    assert overall["score"]["mean"] == pytest.approx(want.score.mean + sum(free.values()) / n)
    _wait_no_actors()
    assert not _session(victim.pid)


def test_a_node_that_joins_later_takes_work(ray_env: Cluster) -> None:
    sbx = RaySandbox.create(owner="t-join")
    try:
        before = set(sbx.nodes())
        ray_env.start(slots=1)
        deadline = time.monotonic() + 60
        while len(set(sbx.nodes()) - before) < 1 and time.monotonic() < deadline:
            task = next(iter(TaskRegistry()))
            sbx.run(Workspace(task.repo_files()), "pwd", Limits(), task)  # calls drive the scaling
            time.sleep(0.5)
        assert set(sbx.nodes()) - before, "the new node got no sandbox actor"
    finally:
        sbx.close()
    _wait_no_actors()


_DRIVER = """
import sys
from sandbox_env.sandbox.ray_backend.sandbox import RaySandbox
from sandbox_env.suite.tasks import TaskRegistry, TaskSpec
from sandbox_env.workspace import Workspace
from sandbox_env.models import Limits
sbx = RaySandbox.create(owner=sys.argv[1])
task = next(iter(TaskRegistry()))
print(sbx.run(Workspace(task.repo_files()), "pwd", Limits(), task).outcome.value, flush=True)
sys.stdin.read()
"""


def test_a_killed_driver_leaves_no_sandbox_running(ray_env: Cluster) -> None:
    p = subprocess.Popen([sys.executable, "-c", _DRIVER, "t-crash"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True, env={**os.environ})
    try:
        assert p.stdout is not None and p.stdout.readline().strip() == Outcome.passed.value
        assert _sandbox_actor_processes() >= 1
    finally:
        p.kill()
        p.wait()
    _wait_no_actors()  # Ray ends the actors of a dead driver; cleanup() reaps what they left
    assert RaySandbox.cleanup("t-crash") == 0


def _docker() -> Any:
    """The Docker engine with the runner image, or None."""
    try:
        import docker

        client = docker.from_env(timeout=10)
        client.ping()
        from sandbox_env.sandbox.docker import RUNNER_IMAGE

        client.images.get(RUNNER_IMAGE)
        return client
    except Exception:
        return None


def _owned(client: Any, owner: str) -> tuple[list[Any], list[Any]]:
    """The containers and volumes of ``owner``'s sandboxes on any node (label ``owner@node``)."""
    from sandbox_env.sandbox.docker import LABEL_OWNER, labelled

    mine = lambda labels: (labels or {}).get(LABEL_OWNER, "").startswith(f"{owner}@")  # noqa: E731
    return ([c for c in labelled(client, LABEL_OWNER) if mine(c.labels)],
            [v for v in client.volumes.list(filters={"label": LABEL_OWNER}) if mine(v.attrs.get("Labels"))])


def _wait_owned(client: Any, owner: str, at_least: int, timeout: float = 120) -> int:
    deadline = time.monotonic() + timeout
    while (n := len(_owned(client, owner)[0])) < at_least and time.monotonic() < deadline:
        time.sleep(0.5)
    assert n >= at_least, f"{owner}: {n} container(s), expected {at_least}"
    return n


@pytest.mark.docker
def test_docker_on_the_cluster_labels_every_box_and_leaves_none(ray_env: Cluster,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Docker inner mode on every node (one engine here, shared by the local nodes): each node's
    warm boxes carry the driver's owner and the node (``owner@node``); a killed driver leaves
    them until the nodes' reapers have run (RaySandbox.cleanup, what `sandbox-env reap` runs in
    ray mode); a lost node leaves its own until its host's reaper runs (at close, from a
    surviving node of that host); closing leaves none. One short run on the cluster."""
    from sandbox_env.sandbox.docker import LABEL_OWNER, LABEL_ROLE
    from sandbox_env.sandbox.ray_backend.actor import node_owner

    client = _docker()
    if client is None:
        pytest.skip("Docker engine or runner image not available")
    monkeypatch.setenv(INNER_ENV, "docker")
    task = next(iter(TaskRegistry()))
    nodes = sum(1 for p in ray_env.nodes if p.poll() is None)
    # a killed driver: Ray ends its actors without closing them, their boxes stay ...
    p = subprocess.Popen([sys.executable, "-c", _DRIVER, "t-dock-crash"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True, env={**os.environ})
    try:
        assert p.stdout is not None and p.stdout.readline().strip() == Outcome.passed.value
        _wait_owned(client, "t-dock-crash", 2 * nodes)  # every node's warm pool (two boxes)
    finally:
        p.kill()
        p.wait()
    _wait_no_actors()
    assert _owned(client, "t-dock-crash")[0]
    assert RaySandbox.cleanup("t-dock-crash") >= 2 * nodes  # ... until the nodes' reapers ran
    assert _owned(client, "t-dock-crash") == ([], [])

    sbx = RaySandbox.create(owner="t-dock")
    try:
        ids = set(sbx.nodes())
        assert len(ids) == nodes
        _wait_owned(client, "t-dock", 2 * nodes)
        boxes, _ = _owned(client, "t-dock")
        assert {b.labels[LABEL_OWNER] for b in boxes} == {node_owner("t-dock", i) for i in ids}
        assert {b.labels[LABEL_ROLE] for b in boxes} == {"run"}
        lost = next(p for p in reversed(ray_env.nodes) if p.poll() is None and p is not ray_env.nodes[0])
        ray_env.kill(lost)  # a node lost with its warm boxes: nobody there to remove them
        assert len(_owned(client, "t-dock")[0]) >= 2 * nodes
        cmd, limits = "python -c 'print(6 * 7)'", Limits(timeout_s=60)
        for _ in range(4):  # a call sent to the lost node before it was noticed is infra: again
            res = sbx.run(Workspace(task.repo_files()), cmd, limits, task)
            if res.outcome != Outcome.infra_error:
                break
        assert res.outcome == Outcome.passed and "42" in res.output, res.output
    finally:
        sbx.close()
    assert _owned(client, "t-dock") == ([], [])
    _wait_no_actors()


def test_nothing_here_stays_attached_to_the_cluster(cluster: Cluster) -> None:
    """Runs last in this module: no test left this (pytest's) process connected as a driver."""
    assert not ray.is_initialized()


def test_binary_files_runs_wrote_cross_the_wire_unchanged() -> None:
    """A run's binary files (checkpoints) go to the node with the call and come back with the
    reply: the next command on any node sees them."""
    from sandbox_env.models import RunResult
    from sandbox_env.sandbox.ray_backend.wire import RunCall, RunReply

    task = next(iter(TaskRegistry()))
    blob = bytes(range(256)) * 3
    call = RunCall(files={"a.py": "x = 1\n"}, blobs={"ckpt/best.pt": blob}, command="true", limits=Limits(),
                   task=task)
    assert RunCall.model_validate_json(call.model_dump_json()).blobs == {"ckpt/best.pt": blob}
    done = RunResult(command="true", output="", exit_code=0, outcome="passed", duration_s=0.1)
    reply = RunReply(result=done, blobs={"ckpt/best.pt": blob})
    assert RunReply.model_validate_json(reply.model_dump_json()).blobs == {"ckpt/best.pt": blob}
