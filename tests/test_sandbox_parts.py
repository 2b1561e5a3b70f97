"""The sandbox layer's shared rooms, without an engine: output cap and outcome, the check protocol's
host side, and the docker backend's archive, engine-error handling and warm pool (with doubles)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path
from typing import Any

import pytest

from sandbox_env.kit.check_runtime import kit_files
from sandbox_env.models import Outcome
from sandbox_env.sandbox.base import SandboxUnavailable
from sandbox_env.sandbox.outcome import OOM_NOTE, OutputCap, cap_output, classify_run, infra_run, run_result
from sandbox_env.sandbox.verification import (
    CheckInputs,
    check_files,
    infra_verdict,
    verdict_from_check,
)
from sandbox_env.suite.tasks import TaskRegistry


# -- output cap and outcome ---------------------------------------------------------------------
def test_output_cap_keeps_head_and_tail_and_counts_the_rest() -> None:
    data = b"".join(b"%06d\n" % i for i in range(10_000))
    one_shot = cap_output(data, 1000)
    cap = OutputCap(1000)
    for i in range(0, len(data), 333):  # streamed in odd chunks: same text
        cap.feed(data[i:i + 333])
    assert cap.text() == one_shot and cap.size == len(data)
    assert one_shot.startswith("000000\n") and one_shot.rstrip().endswith("009999")
    assert f"[... output truncated: {len(data) - 1000} bytes omitted ...]" in one_shot
    assert cap_output(b"short\n", 1000) == "short\n"
    assert cap_output(b"a\x00b\xff", 1000) == "a\ufffdb\ufffd"  # NUL and invalid UTF-8


def test_classify_run_from_facts() -> None:
    assert classify_run(None, True, False, "") == Outcome.timeout
    assert classify_run(137, False, True, "") == Outcome.oom_killed
    assert classify_run(1, False, False, "RuntimeError: can't allocate memory") == Outcome.oom_killed
    assert classify_run(0, False, False, "MemoryError") == Outcome.passed  # caught and survived
    assert classify_run(0, False, False, "") == Outcome.passed
    assert classify_run(2, False, False, "boom") == Outcome.failed


def test_run_result_annotates_and_classifies_once() -> None:
    res = run_result("python x.py", "out", exit_code=137, timed_out=False, oom_killed=True,
                     duration_s=1.23456, notes=["skipped binary file a.bin"], source="docker")
    assert res.outcome == Outcome.oom_killed and res.duration_s == 1.235
    assert res.output == f"out\n[sandbox] {OOM_NOTE}\n[sandbox] skipped binary file a.bin"
    assert res.changed_files == {}
    bad = infra_run("ls", "no container", "docker")
    assert bad.outcome == Outcome.infra_error and bad.exit_code is None and bad.output == "no container"


# -- the check protocol, host side ------------------------------------------------------------------
def test_check_files_carry_the_checks_and_the_runtime(toy_tasks: TaskRegistry, tmp_path: Path) -> None:
    task = toy_tasks.get("toy_mean")
    (task.checks_dir / "__pycache__").mkdir(exist_ok=True)
    (task.checks_dir / "__pycache__" / "check.cpython-311.pyc").write_bytes(b"\0")
    files = check_files(task)
    kit = kit_files()
    assert "check.py" in files and kit and all(files[name] == data for name, data in kit.items())
    assert not any("__pycache__" in p for p in files)
    CheckInputs(task).write(tmp_path / "checks")
    assert all((tmp_path / "checks" / name).read_bytes() == data for name, data in kit.items())


def test_only_the_nonced_consistent_verdict_counts() -> None:
    line = 'SANDBOX_VERDICT n1 {"passed": true, "outcome": "passed", "reasons": []}'
    kw: dict[str, Any] = {"exit_code": 0, "duration_s": 1.0, "source": "local"}
    assert verdict_from_check(line, "n1", **kw).passed
    forged = verdict_from_check(line, "other", **kw)
    assert forged.outcome == Outcome.infra_error and "no verdict" in forged.reasons[0]
    odd = verdict_from_check('SANDBOX_VERDICT n1 {"passed": true, "outcome": "failed"}', "n1", **kw)
    assert not odd.passed and odd.outcome == Outcome.infra_error
    late = verdict_from_check(line, "n1", timed_out=True, **kw)
    assert late.outcome == Outcome.infra_error and "time budget" in late.reasons[0]
    assert infra_verdict("x", "docker").reasons == ["x"]


# -- docker backend rooms, with doubles -----------------------------------------------------------
docker = pytest.importorskip("docker")

from sandbox_env.sandbox.docker.archive import tar, untar_text  # noqa: E402
from sandbox_env.sandbox.docker.containers import Box  # noqa: E402
from sandbox_env.sandbox.docker.engine import ContainerError, Engine  # noqa: E402
from sandbox_env.sandbox.docker.pool import WarmPool  # noqa: E402


def _as_container_archive(raw: bytes, extra: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    """What get_archive("/workspace/.") returns: the same members under a top-level dir."""
    out = io.BytesIO()
    with tarfile.open(fileobj=io.BytesIO(raw)) as src, tarfile.open(fileobj=out, mode="w") as dst:
        for m in src.getmembers():
            data = src.extractfile(m).read() if m.isfile() else None  # type: ignore[union-attr]
            m.name = "workspace/" + m.name
            dst.addfile(m, io.BytesIO(data) if data is not None else None)
        for ti, data in extra:
            dst.addfile(ti, io.BytesIO(data) if data is not None else None)
    return out.getvalue()


def test_tar_round_trip_keeps_text_and_skips_links_binaries_and_caches() -> None:
    raw = tar({"a.py": b"print(1)\n", "pkg/b.py": b"x = 2\n"}, uid=1000)
    with tarfile.open(fileobj=io.BytesIO(raw)) as tf:
        members = {m.name: m for m in tf.getmembers()}
    assert members["pkg"].isdir() and members["a.py"].uid == 1000 and members["a.py"].mode == 0o644
    link = tarfile.TarInfo("workspace/ln")
    link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
    blob = tarfile.TarInfo("workspace/blob.bin")
    blob.size = 3
    pyc = tarfile.TarInfo("workspace/__pycache__/a.pyc")
    pyc.size = 1
    files, blobs, skipped, notes = untar_text(_as_container_archive(
        raw, [(link, None), (blob, b"\xff\xfe\x00"), (pyc, b"\0")]))
    assert files == {"a.py": "print(1)\n", "pkg/b.py": "x = 2\n"} and blobs == {"blob.bin": b"\xff\xfe\x00"}
    assert skipped == {"ln", "blob.bin"}
    assert notes == ["skipped link ln"]


class _Client:
    def __init__(self, up: bool) -> None:
        self.up = up

    def ping(self) -> bool:
        if not self.up:
            raise ConnectionError("socket gone")
        return True


def test_engine_failures_tell_engine_down_from_one_broken_container() -> None:
    engine = Engine(_Client(up=True))
    with pytest.raises(ContainerError, match="could not start: boom"), engine.failures("could not start"):
        raise RuntimeError("boom")
    with pytest.raises(KeyError), engine.failures("docker error", docker.errors.DockerException):
        raise KeyError("not a docker error: not translated")
    engine.client.up = False
    with pytest.raises(SandboxUnavailable, match=r"Docker engine not reachable \(socket gone\)"):
        with engine.failures("could not start"):
            raise RuntimeError("boom")


class _Ct:
    def __init__(self, status: str = "running", removable: bool = True) -> None:
        self.status, self.removable, self.removed = status, removable, 0

    def reload(self) -> None:
        return None

    def remove(self, force: bool = False) -> None:
        if not self.removable:
            raise ConnectionError("engine down")
        self.removed += 1


def test_warm_pool_skips_dead_boxes_and_retries_failed_removals() -> None:
    made: list[Box] = []

    def create() -> Box:
        made.append(Box(_Ct(), [], "run"))
        return made[-1]

    pool = WarmPool(create, size=0, errors=docker.errors)  # size 0: no background refill
    dead, stuck = Box(_Ct(status="exited"), [], "run"), Box(_Ct(removable=False), [], "run")
    pool._boxes.put(dead)
    fresh = pool.take()
    assert fresh is made[0] and dead.container.removed == 1  # the dead one was replaced
    pool.destroy(stuck)
    assert pool._orphans == [stuck.container]
    stuck.container.removable = True
    pool.take()
    assert pool._orphans == [] and stuck.container.removed == 1
    pool._boxes.put(Box(_Ct(), [], "run"))
    pool.close()
    assert pool._boxes.empty()


class _Stopping(_Ct):
    """A container seen running for ``reloads`` more reloads, then exited."""

    def __init__(self, reloads: int) -> None:
        super().__init__()
        self.left = reloads

    def reload(self) -> None:
        self.left -= 1
        self.status = "running" if self.left >= 0 else "exited"


def test_a_stream_saying_its_runsc_sandbox_died_waits_for_the_stop(monkeypatch: pytest.MonkeyPatch) -> None:
    """CI 2026-12-02: under runsc a memory bomb's exec stream ended with runsc's own "WaitPID failed:
    EOF" before the watchdog saw the container stop, and the run came back `failed`, not OOM."""
    from sandbox_env.sandbox.docker import runner

    monkeypatch.setattr(runner.time, "sleep", lambda _s: None)
    lost = 'waiting on pid 3: urpc method "containerManager.WaitPID" failed: EOF'
    assert runner._sandbox_died(Box(_Stopping(3), [], "run", runtime="runsc"), lost)
    assert not runner._sandbox_died(Box(_Stopping(3), [], "run", runtime="runsc"), "exit 1")  # no wait
    assert runner._sandbox_died(Box(_Stopping(0), [], "run", runtime="runsc"), "exit 1")  # stopped already
    assert not runner._sandbox_died(Box(_Stopping(0), [], "run", runtime="runc"), lost)  # runc: per process
    monkeypatch.setattr(runner, "SANDBOX_LOST_WAIT_S", 0.0)
    assert not runner._sandbox_died(Box(_Stopping(10**6), [], "run", runtime="runsc"), lost)  # bounded


def test_a_container_that_fails_to_start_is_removed_with_its_volumes() -> None:
    """create_box's failure path: the container goes first (it holds the volumes), then they do."""
    from sandbox_env.sandbox.docker.containers import create_box

    removed: list[str] = []

    class _Obj:
        def __init__(self, name: str) -> None:
            self.name = name

        def remove(self, force: bool = False) -> None:
            if self.name.startswith("vol") and "container" not in removed:
                raise RuntimeError("volume has active mounts")  # as the engine answers
            removed.append(self.name)

    class _Container(_Obj):
        def start(self) -> None:
            raise RuntimeError("OCI runtime create failed")

    class _Client:
        class volumes:
            @staticmethod
            def create(**_: Any) -> _Obj:
                return _Obj(f"vol{len(removed)}-{id(_)}")

        class containers:
            @staticmethod
            def create(*_: Any, **__: Any) -> _Container:
                return _Container("container")

    with pytest.raises(RuntimeError, match="OCI runtime"):
        create_box(_Client(), "img", "owner", "run")
    assert removed[0] == "container" and len(removed) > 1 and all(r.startswith("vol") for r in removed[1:])
