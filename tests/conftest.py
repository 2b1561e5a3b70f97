"""Shared fixtures: the toy fixture task (no torch), the real task registry, a live server."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from sandbox_env.sandbox.local import LocalSandbox
from sandbox_env.suite.tasks import TaskRegistry
from sandbox_env.suite.traces import Provenance, record_task

ROOT = Path(__file__).resolve().parent.parent
FIXTURE_TASKS = Path(__file__).parent / "fixtures" / "tasks"


@pytest.fixture(scope="session")
def toy_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the fixture tasks with traces recorded for real by LocalSandbox."""
    root = tmp_path_factory.mktemp("tasks")
    shutil.copytree(FIXTURE_TASKS, root, dirs_exist_ok=True)
    reg = TaskRegistry(root)
    for task in reg:
        record_task(task, LocalSandbox(), Provenance(source="local", torch=None), log=lambda *_: None)
    return root


@pytest.fixture(scope="session")
def toy_tasks(toy_root: Path) -> TaskRegistry:
    return TaskRegistry(toy_root)


@pytest.fixture(scope="session")
def real_tasks() -> TaskRegistry:
    return TaskRegistry(ROOT / "task_repos")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ThreadedServer:
    """A real uvicorn server for ``app`` on a free local port, run in a daemon thread."""

    def __init__(self, app: Any, **config: Any) -> None:
        import uvicorn

        self.port = free_port()
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port,
                                                    log_level="warning", **config))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def start(self) -> ThreadedServer:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert time.monotonic() < deadline and self.thread.is_alive(), "uvicorn did not start"
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def start_server(task_root: Path, mode: str = "mock", *extra: str,
                 env_extra: dict[str, str] | None = None) -> tuple[subprocess.Popen, str]:
    """A real uvicorn server in a subprocess; returns (process, base URL) once healthy."""
    port = free_port()
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env_extra or {})}
    env.pop("SANDBOX_ENV_JUDGE_MODEL", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "sandbox_env.cli", "--task-root", str(task_root), "serve",
         "--mode", mode, "--port", str(port), "--log-level", "warning", *extra],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {proc.stdout.read().decode() if proc.stdout else ''}")
        try:
            if httpx.get(url + "/health", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("server did not become healthy in 30 s")


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """A real uvicorn server in mock mode over the real tasks (8 sessions), one per test module."""
    proc, url = start_server(ROOT / "task_repos", "mock", "--max-sessions", "8")
    yield url
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture(scope="module")
def toy_server(toy_root: Path) -> Iterator[str]:
    proc, url = start_server(toy_root, "mock", "--max-sessions", "40")
    yield url
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture(scope="session", autouse=True)
def no_sandbox_containers_left() -> Iterator[None]:
    """After the whole session, no container or volume of sandbox-env may remain."""
    yield
    try:
        import docker

        from sandbox_env.sandbox.docker import labelled

        client = docker.from_env(timeout=5)
        client.ping()
    except Exception:
        return
    deadline = time.monotonic() + 15  # removals triggered by server shutdowns may still run
    while True:
        left = labelled(client, "sandbox-env.owner")
        vols = client.volumes.list(filters={"label": "sandbox-env.owner"})
        if (not left and not vols) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert not left, f"sandbox containers left behind: {[c.name for c in left]}"
    assert not vols, f"sandbox volumes left behind: {[v.name for v in vols]}"
