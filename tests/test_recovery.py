"""Crash recovery in docker mode: SIGKILL mid-run, the engine going away and coming back, and
outputs that are not UTF-8 or are enormous. Real server, real engine."""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from sandbox_env.client import EnvClientError, TriageClient
from sandbox_env.sandbox.docker import labelled
from sandbox_env.suite.oracle import oracle_actions
from sandbox_env.suite.tasks import TaskRegistry

from .conftest import start_server

docker = pytest.importorskip("docker")
pytestmark = pytest.mark.docker

try:
    CLIENT = docker.from_env(timeout=5)
    CLIENT.images.get("sandbox-env-runner:torch2.13.0")
except Exception as _exc:
    pytest.skip(f"Docker engine or runner image not available: {_exc}", allow_module_level=True)

ENGINE_SOCKET = "/var/run/docker.sock"


class EngineProxy:
    """A Unix-socket relay to the engine that the test can cut and restore: to the server it
    behaves as the engine stopping (connections reset, then refused) and coming back."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._listener: socket.socket | None = None
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()

    def start(self) -> None:
        self._listener = socket.socket(socket.AF_UNIX)
        self._listener.bind(str(self.path))
        self._listener.listen(64)
        threading.Thread(target=self._accept, args=(self._listener,), daemon=True).start()

    def stop(self) -> None:
        assert self._listener is not None
        self._listener.close()
        self.path.unlink()
        with self._lock:
            conns, self._conns = self._conns, []
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            c.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            upstream = socket.socket(socket.AF_UNIX)
            upstream.connect(ENGINE_SOCKET)
            with self._lock:
                self._conns += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            try:
                dst.shutdown(socket.SHUT_WR)
            except OSError:
                pass


def owned(owner: str) -> list:  # type: ignore[type-arg]
    return labelled(CLIENT, f"sandbox-env.owner={owner}")


@pytest.fixture
def proxy(tmp_path: Path) -> Iterator[EngineProxy]:
    p = EngineProxy(tmp_path / "engine.sock")
    p.start()
    yield p


def test_engine_outage_is_a_clear_503_and_the_server_recovers(toy_root: Path, toy_tasks: TaskRegistry,
                                                              proxy: EngineProxy) -> None:
    proc, url = start_server(toy_root, "docker", "--owner", "pytest-outage",
                             env_extra={"DOCKER_HOST": f"unix://{proxy.path}"})
    try:
        c = TriageClient(url)
        c.reset(task="toy_mean")
        assert c.step({"action_type": "execute_bash", "command": "echo up"}).observation.terminal_output
        proxy.stop()  # the engine goes away
        with pytest.raises(EnvClientError) as err:
            c.step({"action_type": "execute_bash", "command": "echo down"})
        assert err.value.status == 503
        assert "Docker engine not reachable" in err.value.detail and "not taken" in err.value.detail
        assert c.state().step_count == 1  # the refused step did not count
        assert c.step({"action_type": "read_file", "filename": "stats.py"}).observation.step_number == 2
        deadline = time.monotonic() + 10
        while (h := c.health())["docker_available"]:
            assert time.monotonic() < deadline, h
            time.sleep(0.5)
        assert h["status"] == "degraded" and "not reachable" in h["docker_detail"]
        proxy.start()  # the engine is back: the same episode carries on to a verified fix
        for action in oracle_actions(toy_tasks.get("toy_mean")):
            res = c.step(action)
        assert res.done and res.observation.verdict is not None and res.observation.verdict.passed
        deadline = time.monotonic() + 10
        while not (h := c.health())["docker_available"]:
            assert time.monotonic() < deadline, h
            time.sleep(0.5)
        assert h["status"] == "healthy"
        c.close_episode()
        c.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    deadline = time.monotonic() + 15  # boxes that could not be removed during the outage are gone
    while owned("pytest-outage"):
        assert time.monotonic() < deadline, [ct.name for ct in owned("pytest-outage")]
        time.sleep(0.5)


def test_sigkill_mid_run_then_restart_reaps_every_leftover(toy_root: Path) -> None:
    proc, url = start_server(toy_root, "docker", "--owner", "pytest-crash")
    c = TriageClient(url, timeout=120)
    c.reset(task="toy_mean")
    outcome: list[str] = []

    def run_long() -> None:
        try:
            c.step({"action_type": "execute_bash", "command": "sleep 60"})
            outcome.append("answered")
        except httpx.HTTPError as exc:  # the server died under it
            outcome.append(type(exc).__name__)

    in_flight = threading.Thread(target=run_long, daemon=True)
    in_flight.start()
    deadline = time.monotonic() + 30
    while not any(ct.status == "running" and "sleep 60" in json.dumps(ct.top())
                  for ct in owned("pytest-crash")):
        assert time.monotonic() < deadline, "the run never started"
        time.sleep(0.3)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    leftovers = {ct.id for ct in owned("pytest-crash")}
    assert leftovers, "a SIGKILLed server leaves its containers behind (nothing could remove them)"
    proc, url = start_server(toy_root, "docker", "--owner", "pytest-crash")
    try:
        remaining = {ct.id for ct in owned("pytest-crash")}
        assert not leftovers & remaining, "the restarted server did not reap its predecessor's containers"
        c = TriageClient(url)
        c.reset(task="toy_mean")
        echo = c.step({"action_type": "execute_bash", "command": "echo ok"})
        assert "ok" in echo.observation.terminal_output
        c.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    in_flight.join(timeout=5)
    assert outcome and outcome[0] != "answered"
    assert not owned("pytest-crash")


@pytest.mark.parametrize("mode", ["docker", "local"])
def test_binary_and_enormous_outputs_are_served_as_valid_capped_text(toy_root: Path, mode: str) -> None:
    proc, url = start_server(toy_root, mode, "--owner", f"pytest-output-{mode}")
    try:
        with TriageClient(url) as c:
            c.reset(task="toy_mean")
            raw = c.step({"action_type": "execute_bash",
                          "command": "head -c 4000 /dev/urandom; printf '\\xff\\xfe\\x00end'"})
            text = raw.observation.terminal_output
            assert "end" in text and "\x00" not in text.replace("\\x00", "")
            json.dumps(raw.model_dump())  # serialisable as it came over the wire
            flood = c.step({"action_type": "execute_bash", "command": "yes spam | head -c 200000000"})
            out = flood.observation.terminal_output
            assert len(out) < 200_000 and "spam" in out
            made = c.step({"action_type": "execute_bash", "command": "head -c 3000 /dev/urandom > blob.bin"})
            assert "blob.bin" not in made.observation.current_files  # binary files are no text to show
            again = c.step({"action_type": "execute_bash", "command": "wc -c < blob.bin"})
            assert "3000" in again.observation.terminal_output  # ... and the next command still has them
            diff = c.step({"action_type": "view_git_diff"}).observation
            assert diff.step_number == 5 and "blob.bin" in diff.terminal_output  # listed, never diffed
    finally:
        proc.terminate()
        proc.wait(timeout=30)
