"""The runner venv: the Python environment process mode runs agent code and checks with.

A venv the project creates and owns (``sandbox-env runner build``), with torch pinned to the
same CPU build as the docker runner image, so process-mode runs never use whatever the host
has installed. It lives in a cache dir (``$SANDBOX_ENV_RUNNER_VENV``, else
``$XDG_CACHE_HOME/sandbox-env/runner-<spec hash>``, /var/cache for root), is built in a scratch directory and
moved into place only once torch imports, and carries a marker (``runner.json``) recording
what it was built from; a build whose marker matches is a no-op.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from .images import WHEEL_SPECS

MARKER = "runner.json"
TORCH_VERSION = next(s.split("==", 1)[1] for s in WHEEL_SPECS if s.startswith("torch=="))
_PROBE = ("import json, platform, sys, torch; print(json.dumps({"
          "'torch': torch.__version__.split('+')[0], 'cuda': torch.version.cuda, "
          "'python': platform.python_version(), 'base_prefix': sys.base_prefix}))")
_MINOR = "{}.{}".format(*sys.version_info[:2])


class RunnerEnv(BaseModel):
    """A built runner venv: where it is and what is in it (the marker's content)."""

    path: str
    python: str  # the venv's interpreter
    base_prefix: str  # where the interpreter's standard library lives (bound read-only too)
    torch: str
    python_version: str
    spec_hash: str
    built_at: str

    def provenance(self) -> dict[str, Any]:
        return {"image": f"runner-venv:{self.spec_hash}", "torch": self.torch,
                "runner_python": self.python_version, "runner_venv": self.path}


def spec_hash(python: str | None = None) -> str:
    """What a runner is built from: the pinned wheels and the interpreter's minor version."""
    ver = _MINOR if python is None else _minor(python)
    return hashlib.sha256(json.dumps([WHEEL_SPECS, ver]).encode()).hexdigest()[:12]


def _minor(python: str) -> str:
    out = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


def default_python() -> str:
    """The system interpreter when it is this Python's minor version, else this one's base."""
    system = Path("/usr/bin/python3")
    if system.exists():
        try:
            if _minor(str(system)) == _MINOR:
                return str(system)
        except (OSError, subprocess.CalledProcessError):
            pass
    base = Path(sys.base_prefix) / "bin" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    return str(base if base.exists() else Path(sys.executable).resolve())


def venv_dir(python: str | None = None) -> Path:
    """Where the runner venv lives (``$SANDBOX_ENV_RUNNER_VENV`` overrides)."""
    if env := os.environ.get("SANDBOX_ENV_RUNNER_VENV"):
        return Path(env).expanduser().absolute()
    # root's home is private, and process mode runs sandboxes as an unprivileged uid when root
    cache = Path("/var/cache") if os.geteuid() == 0 else Path(
        os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return (cache / "sandbox-env" / f"runner-{spec_hash(python)}").absolute()


def load(path: Path | None = None) -> RunnerEnv | None:
    """The runner at ``path`` (default location) if it is built and current, else None."""
    path = path or venv_dir()
    try:
        env = RunnerEnv.model_validate_json((path / MARKER).read_text())
    except (OSError, ValueError):
        return None
    env.path, env.python = str(path), str(path / "bin" / "python")  # the venv may have been moved
    if not Path(env.python).exists() or env.torch != TORCH_VERSION:
        return None
    return env


def build(*, force: bool = False, python: str | None = None, pip_args: list[str] | None = None,
          log: Callable[[str], None] = print) -> RunnerEnv:
    """Create the runner venv unless a current one exists; returns it.

    Raises RuntimeError (with pip's output) when torch cannot be installed or is not the
    pinned CPU build.
    """
    python = python or default_python()
    dest = venv_dir(python)
    current = None if force else load(dest)
    if current is not None and current.spec_hash == spec_hash(python):
        log(f"runner venv up to date: {dest} (torch {current.torch}, Python {current.python_version})")
        return current
    scratch = dest.with_name(f"{dest.name}.build-{os.getpid()}")
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.parent.mkdir(parents=True, exist_ok=True)
    log(f"runner venv: creating {dest} from {python}")
    try:
        _run([python, "-m", "venv", str(scratch)])
        if os.environ.get("SANDBOX_ENV_RUNNER_PIP_ARGS"):
            pip_args = [*(pip_args or []), *os.environ["SANDBOX_ENV_RUNNER_PIP_ARGS"].split()]
        log(f"runner venv: pip install {' '.join(WHEEL_SPECS)} {' '.join(pip_args or [])}".rstrip())
        _run([str(scratch / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
              *(pip_args or []), *WHEEL_SPECS])
        info = json.loads(_run([str(scratch / "bin" / "python"), "-I", "-c", _PROBE]).splitlines()[-1])
        if info["torch"] != TORCH_VERSION or info["cuda"] is not None:
            raise RuntimeError(f"the runner got torch {info['torch']} (CUDA {info['cuda']}), not the "
                               f"{TORCH_VERSION} CPU build: pass --pip-args '--index-url "
                               "https://download.pytorch.org/whl/cpu'")
        if dest.exists():
            shutil.rmtree(dest)
        scratch.rename(dest)  # venvs are relocatable enough for `bin/python` (a symlink)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    env = RunnerEnv(path=str(dest), python=str(dest / "bin" / "python"), base_prefix=info["base_prefix"],
                    torch=info["torch"], python_version=info["python"], spec_hash=spec_hash(python),
                    built_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    (dest / MARKER).write_text(env.model_dump_json(indent=1) + "\n")
    log(f"runner venv: ready ({dest}, torch {env.torch}, Python {env.python_version})")
    return env


def _run(argv: list[str]) -> str:
    res = subprocess.run(argv, capture_output=True, text=True, check=False)
    if res.returncode:
        raise RuntimeError(f"{' '.join(argv[:4])} ... failed ({res.returncode}):\n{res.stdout[-2000:]}"
                           f"{res.stderr[-4000:]}")
    return res.stdout
