"""Builds the runner and server images, online or with no registry at all (idempotent, cached).

Offline path: a Debian base bootstrapped with mmdebstrap (images/bootstrap-base.sh) and a
local wheelhouse (images/wheels/, filled by the host's pip) feed the same Dockerfiles that
online users build from the official slim Python image and the PyTorch CPU index.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .sandbox.docker import RUNNER_IMAGE

ROOT = Path(__file__).resolve().parent.parent
IMAGES = ROOT / "images"
WHEELS = IMAGES / "wheels"
BASE_IMAGE = "sandbox-env-base:bookworm"
SERVER_IMAGE = "sandbox-env-server:latest"
ONLINE_BASE = "python:3.11-slim"
OFFLINE_PIP = "--no-index --find-links /wheels"
# What agent code runs with, in the runner image and the process-mode runner venv alike: the repos
# ship tests/, so a real engineer's pytest is there too.
WHEEL_SPECS = ["torch==2.13.0", "numpy", "pytest==9.2.0"]


SOURCE_LABEL = "org.sandbox-env.source-hash"


def source_hash(*paths: Path) -> str:
    """Hash of the files an image is built from (so a stale image is rebuilt)."""
    h = hashlib.sha256()
    for root in paths:
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        for f in files:
            if "__pycache__" in f.parts or f.suffix == ".pyc":
                continue
            h.update(str(f.relative_to(ROOT)).encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


def runner_hash() -> str:
    h = hashlib.sha256(source_hash(IMAGES / "runner.Dockerfile").encode())
    h.update(" ".join(WHEEL_SPECS).encode())  # the packages are a build argument, not in the file
    return h.hexdigest()


def server_hash() -> str:
    return source_hash(IMAGES / "server.Dockerfile", ROOT / "pyproject.toml", ROOT / "sandbox_env",
                       ROOT / "task_repos")


def _fresh(client: Any, tag: str, want: str) -> bool:
    """The image exists and was built from the current sources."""
    import docker

    try:
        return (client.images.get(tag).labels or {}).get(SOURCE_LABEL) == want
    except docker.errors.ImageNotFound:
        return False


def _exists(client: Any, tag: str) -> bool:
    import docker

    try:
        client.images.get(tag)
        return True
    except docker.errors.ImageNotFound:
        return False


def ensure_wheels(log: Callable[[str], None]) -> None:
    """Fill images/wheels with the runner's packages (WHEEL_SPECS) and the server's dependencies."""
    have = {p.name.split("-")[0].lower() for p in WHEELS.glob("*.whl")}
    if {*(_name(s) for s in WHEEL_SPECS), *_server_requirements()} <= have:
        log("wheelhouse: present")
        return
    log(f"wheelhouse: pip download {' '.join(WHEEL_SPECS)} and the server dependencies")
    WHEELS.mkdir(exist_ok=True)
    for spec in ([*WHEEL_SPECS], [f"{ROOT}[docker]", "setuptools>=68", "wheel"]):
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "-d", str(WHEELS), *spec],
                       check=True)
    for p in WHEELS.glob("sandbox_env-*"):
        p.unlink()  # the project itself is copied into the server image, not taken from here


def _server_requirements() -> set[str]:
    """Distribution names (wheel-normalised) the server image installs, read from pyproject."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    specs = project["dependencies"] + project["optional-dependencies"]["docker"]
    return {_name(s) for s in specs}


def _name(spec: str) -> str:
    """A requirement's distribution name, wheel-normalised ("pytest==9.2.0" -> "pytest")."""
    return re.split(r"[^A-Za-z0-9_.-]", spec, maxsplit=1)[0].replace("-", "_").lower()


def ensure_base(client: Any, online: bool, log: Callable[[str], None]) -> str:
    """The base image tag to build from: the official slim image online, else a bootstrap."""
    if online:
        if not _exists(client, ONLINE_BASE):
            log(f"pulling {ONLINE_BASE}")
            client.images.pull(ONLINE_BASE)
        return ONLINE_BASE
    if not _exists(client, BASE_IMAGE):
        log(f"bootstrapping {BASE_IMAGE} from Debian packages (mmdebstrap, ~1 min)")
        subprocess.run(["bash", str(IMAGES / "bootstrap-base.sh"), BASE_IMAGE], check=True)
    return BASE_IMAGE


def _build(client: Any, *, tag: str, dockerfile: str, context: Path, buildargs: dict[str, str],
           log: Callable[[str], None]) -> None:
    log(f"building {tag} ({dockerfile})")
    for chunk in client.api.build(path=str(context), dockerfile=dockerfile, tag=tag, rm=True,
                                  buildargs=buildargs, decode=True):
        if "error" in chunk:
            raise RuntimeError(f"building {tag} failed: {chunk['error']}")
        line = (chunk.get("stream") or "").strip()
        if line.startswith("Step ") or line.startswith("Successfully"):
            log(f"  {line}")


def registry_reachable(client: Any) -> bool:
    """Whether the official base image can be had (already present, or pullable)."""
    if _exists(client, ONLINE_BASE):
        return True
    try:
        client.images.pull(ONLINE_BASE)
        return True
    except Exception:
        return False


def build_all(*, force: bool = False, online: bool | None = None, server: bool = True,
              log: Callable[[str], None] = print) -> dict[str, str]:
    """Build the runner (and server) images unless present; returns tag -> image id."""
    import docker

    client = docker.from_env(timeout=600)
    hashes = {RUNNER_IMAGE: runner_hash(), SERVER_IMAGE: server_hash()}
    wanted = [RUNNER_IMAGE] + ([SERVER_IMAGE] if server else [])
    stale = [t for t in wanted if force or not _fresh(client, t, hashes[t])]
    if not stale:
        log("images up to date: " + ", ".join(wanted))
        return {t: client.images.get(t).id for t in wanted}
    if online is None:
        online = registry_reachable(client)
        log(f"registry {'reachable' if online else 'unreachable'}: "
            f"{'online' if online else 'offline'} build")
    base = ensure_base(client, online, log)
    args = {"BASE_IMAGE": base}
    if not online:
        ensure_wheels(log)
        args["PIP_INSTALL_ARGS"] = OFFLINE_PIP
    if RUNNER_IMAGE in stale:
        _build(client, tag=RUNNER_IMAGE, dockerfile="runner.Dockerfile", context=IMAGES,
               buildargs={**args, "SOURCE_HASH": hashes[RUNNER_IMAGE],
                          "RUNNER_PACKAGES": " ".join(WHEEL_SPECS)}, log=log)
    if SERVER_IMAGE in stale:
        _build(client, tag=SERVER_IMAGE, dockerfile="images/server.Dockerfile", context=ROOT,
               buildargs={**args, "SOURCE_HASH": hashes[SERVER_IMAGE]}, log=log)
    return {t: client.images.get(t).id for t in wanted}
