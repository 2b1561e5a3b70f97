"""DockerSandbox against the real engine: isolation, limits, classification, cleanup.

Runs under the runtime $SANDBOX_ENV_RUNTIME names (runc by default): e.g.
`SANDBOX_ENV_RUNTIME=runsc pytest tests/test_docker.py` runs the same suite under gVisor, and
the fixture first checks, from inside a container, that the runtime is really in effect.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sandbox_env.models import Limits, Outcome
from sandbox_env.suite.tasks import TaskRegistry
from sandbox_env.workspace import Workspace

docker = pytest.importorskip("docker")
pytestmark = pytest.mark.docker


def _engine() -> object | None:
    try:
        c = docker.from_env(timeout=5)
        c.ping()
        c.images.get("sandbox-env-runner:torch2.13.0")
        return c
    except Exception:
        return None


CLIENT = _engine()
if CLIENT is None:
    pytest.skip("Docker engine or runner image not available", allow_module_level=True)

from sandbox_env.sandbox.docker import LABEL_OWNER, DockerSandbox, labelled  # noqa: E402


@pytest.fixture(scope="module")
def sbx() -> Iterator[DockerSandbox]:
    s = DockerSandbox(owner="pytest-docker", pool_size=2)
    report = s.runtime_report()
    if not report.in_effect:
        s.close()
        pytest.fail(f"runtime {s.runtime} is not in effect: {report}")
    yield s
    s.close()
    left = labelled(CLIENT, f"{LABEL_OWNER}=pytest-docker")
    assert left == [], "containers left behind"
    assert CLIENT.volumes.list(filters={"label": f"{LABEL_OWNER}=pytest-docker"}) == []


@pytest.fixture
def toy(toy_tasks: TaskRegistry):  # type: ignore[no-untyped-def]
    return toy_tasks.get("toy_mean")


def run(sbx: DockerSandbox, task, cmd: str, **limits: object):  # type: ignore[no-untyped-def]
    ws = Workspace(task.repo_files())
    return ws, sbx.run(ws, cmd, Limits(**{"timeout_s": 20, **limits}), task)


def test_runs_non_root_without_network_and_copies_files_back(sbx: DockerSandbox, toy) -> None:
    ws, res = run(sbx, toy, "id -u; echo made > new.txt; rm report.py; "
                  "python -c \"import socket; socket.create_connection(('1.1.1.1', 53), 2)\" "
                  "|| echo NO-NETWORK")
    assert res.outcome == Outcome.passed, res.output
    assert res.output.split()[0] == "1000" and "NO-NETWORK" in res.output
    assert ws.files["new.txt"] == "made\n" and "report.py" not in ws.files


def test_the_runner_has_what_a_repo_needs(sbx: DockerSandbox, toy) -> None:
    """torch, numpy and pytest at the pinned versions (the repos ship tests/ an engineer runs)."""
    _, res = run(sbx, toy, "python -c 'import torch, numpy; print(torch.__version__)'; "
                 "python -m pytest --version")
    assert res.outcome == Outcome.passed, res.output
    assert "2.13.0" in res.output and "pytest 9.2.0" in res.output, res.output


def test_real_failure_is_failed(sbx: DockerSandbox, toy) -> None:
    _, res = run(sbx, toy, "python report.py")
    assert res.outcome == Outcome.failed and res.exit_code == 1 and "sanity check failed" in res.output


def test_infinite_loop_times_out_and_tree_is_killed(sbx: DockerSandbox, toy) -> None:
    _, res = run(sbx, toy, "(setsid sleep 1000 &); while true; do :; done", timeout_s=2)
    assert res.outcome == Outcome.timeout and res.exit_code is None
    assert res.duration_s < 10


def test_memory_bomb_is_oom_killed(sbx: DockerSandbox, toy) -> None:
    _, res = run(sbx, toy, "python -c \"x = []\nwhile True: x.append(bytearray(50_000_000))\"",
                 memory_mb=256)
    assert res.outcome == Outcome.oom_killed, res.output


def test_data_rlimit_gives_allocator_error_not_kill(sbx: DockerSandbox, toy) -> None:
    _, res = run(sbx, toy, "python -c \"x = bytearray(900_000_000)\"", data_mb=400)
    assert res.outcome == Outcome.oom_killed and "MemoryError" in res.output


def test_fork_bomb_is_contained(sbx: DockerSandbox, toy) -> None:
    _, res = run(sbx, toy, "python -c \"import os\nn=0\ntry:\n  while True:\n    if os.fork()==0:\n"
                 "      import time; time.sleep(30)\n    n+=1\nexcept OSError as e: print('stopped', n, e)\"",
                 timeout_s=15)
    assert "stopped" in res.output and "Resource temporarily unavailable" in res.output, res.output[-500:]


def test_output_flood_is_capped(sbx: DockerSandbox, toy) -> None:
    _, res = run(sbx, toy, "yes flood | head -c 50000000", output_bytes=10_000)
    assert "output truncated" in res.output and len(res.output) < 12_000


def test_tmpfs_fill_gets_enospc(sbx: DockerSandbox, toy) -> None:
    _, res = run(sbx, toy, "dd if=/dev/zero of=/tmp/fill bs=1M count=4000 2>&1 | grep -o 'No space.*'; "
                 "dd if=/dev/zero of=big bs=1M count=4000 2>&1 | grep -o 'No space.*'; "
                 "touch /home/sandbox/x 2>&1",  # owned by uid 1000: only the read-only root refuses
                 timeout_s=60)
    assert res.output.count("No space left on device") >= 2, res.output
    assert "Read-only file system" in res.output


def test_verify_hides_checks_and_ignores_forged_verdicts(sbx: DockerSandbox, toy) -> None:
    good = Workspace(toy.repo_files())
    good.apply_patch(toy.solution_patch)
    assert sbx.verify(good, toy).passed
    forged = Workspace(toy.repo_files())
    forged.apply_patch((toy.root / "patches" / "fake_verdict.patch").read_text())
    assert not sbx.verify(forged, toy).passed
    snoop = Workspace(toy.repo_files())
    snoop.apply_patch(toy.solution_patch)
    snoop.edit("stats.py", "def mean", "import os\nassert not os.access('/checks', os.R_OK)\n"
               "assert not os.access('/checks/check.py', os.R_OK)\ndef mean")
    v = sbx.verify(snoop, toy)
    assert v.passed, v.reasons


def test_listing_and_reaping_tolerate_a_box_removed_meanwhile(monkeypatch: pytest.MonkeyPatch) -> None:
    """A box removed between the engine's listing and its inspection (another reaper, a box's
    own close) is left out of the listing rather than failing it, and reap goes on to the rest
    (the CI failure of stop 21: a Ray node's pool refilled while a test listed boxes)."""
    from sandbox_env.sandbox.docker import reap

    owner = "pytest-gone"
    label = {LABEL_OWNER: owner}
    gone, kept = (CLIENT.containers.create("sandbox-env-runner:torch2.13.0", "true", labels=label)
                  for _ in range(2))
    collection = type(CLIENT.containers)  # a new collection object on every access
    real_get = collection.get

    def get_after_removal(self, cid: str):  # type: ignore[no-untyped-def]
        if cid == gone.id:
            CLIENT.api.remove_container(cid, force=True)  # removed by someone else just now
        return real_get(self, cid)

    monkeypatch.setattr(collection, "get", get_after_removal)
    try:
        assert [c.id for c in labelled(CLIENT, f"{LABEL_OWNER}={owner}")] == [kept.id]
        assert reap(CLIENT, owner) == 1
        assert labelled(CLIENT, f"{LABEL_OWNER}={owner}") == []
    finally:
        monkeypatch.undo()
        reap(CLIENT, owner)
