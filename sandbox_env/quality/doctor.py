"""`sandbox-env doctor`: which sandbox modes work here, and is docker mode ready? Each line is ok or a fix."""

from __future__ import annotations

import sys
from collections.abc import Callable

from ..images import SERVER_IMAGE
from ..models import Limits, Outcome
from ..sandbox import backend, modes, tiers
from ..sandbox.docker import RUNNER_IMAGE


def backend_lines() -> list[str]:
    """One line per registered backend (can it work here?), then the tier ``auto`` would reach."""
    status = {mode: backend(mode).available() for mode in modes()}
    lines = [f"[{'ok' if ok else '--'}] mode {mode}: {why}" for mode, (ok, why) in status.items()]
    walk = [b.name for b in tiers()]
    picked = next((m for m in walk if status[m][0]), None)
    lines.append(f"[ok] mode auto: tries {' -> '.join(walk)}; the first available here is {picked}"
                 if picked else f"[--] mode auto: tries {' -> '.join(walk)}; none is available here")
    return lines


def run_doctor(say: Callable[[str], None]) -> int:
    """Print one line per check; returns 0 when docker mode can work here."""
    problems = 0

    def line(ok: bool, what: str, fix: str = "") -> None:
        nonlocal problems
        problems += not ok
        say(f"[{'ok' if ok else 'FAIL'}] {what}" + ("" if ok else f"\n       fix: {fix}"))

    for text in backend_lines():
        say(text)
    try:
        import docker
    except ImportError:
        line(False, "docker Python SDK not installed",
             f"bash scripts/setup.sh docker (in the checkout), or {sys.executable} -m pip install "
             "'sandbox-env[docker]'")
        return 1
    try:
        client = docker.from_env(timeout=10)
        info = client.info()
        line(True, f"engine {info.get('ServerVersion')} ({info.get('Driver')}, "
                   f"cgroup v{info.get('CgroupVersion', '1')})")
    except Exception as exc:
        line(False, f"engine not reachable: {exc}",
             "apt-get install -y docker.io && (setsid dockerd > /var/log/dockerd.log 2>&1 &)")
        return 1
    for tag in (RUNNER_IMAGE, SERVER_IMAGE):
        try:
            client.images.get(tag)
            line(True, f"image {tag}")
        except docker.errors.ImageNotFound:
            line(False, f"image {tag} missing", "sandbox-env images build")
    try:
        out = client.containers.run(
            RUNNER_IMAGE, ["python", "-c", "import torch; print(torch.__version__)"],
            remove=True, network_mode="none", read_only=True, mem_limit="1g", pids_limit=64,
            cap_drop=["ALL"], security_opt=["no-new-privileges"], user="1000")
        line(True, f"runner torch {out.decode().strip()} under read-only root, no network, "
                   "memory/pids caps, no capabilities")
    except Exception as exc:
        line(False, f"runner limits: {exc}", "check the engine's cgroup/seccomp support")
        return 1
    from ..sandbox import SandboxUnavailable
    from ..sandbox.docker import DockerSandbox
    from ..suite.tasks import TaskRegistry
    from ..workspace import Workspace

    try:
        sbx = DockerSandbox(owner="doctor", pool_size=0)  # with the runtime $SANDBOX_ENV_RUNTIME names
    except SandboxUnavailable as exc:
        line(False, f"docker sandbox: {exc}", "bash scripts/runsc.sh (runsc), or unset SANDBOX_ENV_RUNTIME")
        return 1
    try:
        rt = sbx.runtime_report()
        line(bool(rt.in_effect), f"runtime {rt.name} {rt.version or '(version unknown)'}: {rt.detail}; "
                                 f"kernel inside a sandbox: {rt.kernel}",
             "the engine ran the container with another runtime: check daemon.json `runtimes`")
        task = next(iter(TaskRegistry()))
        res = sbx.run(Workspace({"probe.py": "import os, socket\nprint(os.getuid())\n"}),
                      "python probe.py && (python -c \"import socket; socket.create_connection(("
                      "'1.1.1.1', 53), 2)\" 2>/dev/null && echo NET || echo NONET)",
                      Limits(timeout_s=60), task)
        ok = res.outcome == Outcome.passed and "1000" in res.output and "NONET" in res.output
        line(ok, f"smoke run through DockerSandbox ({res.duration_s:.2f}s): non-root, no network",
             res.output[-500:])
    finally:
        sbx.close()
    return 1 if problems else 0
