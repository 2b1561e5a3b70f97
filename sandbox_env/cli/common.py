"""What several commands share: the task registry of --task-root, a sandbox that runs for real,
and the one-line message for an optional package that is not installed."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path
from typing import Any

from ..sandbox import Sandbox, make_sandbox
from ..suite.tasks import TaskRegistry

# Optional packages (top-level import name) -> the install extra of pyproject.toml that brings them.
EXTRAS = {"docker": "docker", "matplotlib": "eval", "rich": "eval", "openai": "llm", "torch": "torch",
          "numpy": "torch", "ray": "ray", "trl": "trl", "transformers": "trl", "accelerate": "trl",
          "datasets": "trl", "pytest": "dev", "schemathesis": "dev"}
CHECKOUT = Path(__file__).resolve().parents[2]  # the project checkout, when installed from one


def task_registry(args: argparse.Namespace, *, allow_uncertified: bool | None = None) -> TaskRegistry:
    """The tasks under --task-root (default: ./task_repos); ``allow_uncertified``: serve
    variants not yet certified (None: $SANDBOX_ENV_ALLOW_UNCERTIFIED)."""
    return TaskRegistry(Path(args.task_root) if args.task_root else None,
                        allow_uncertified=allow_uncertified)


def real_sandbox(args: argparse.Namespace, owner: str) -> tuple[Sandbox, dict[str, Any]]:
    """A sandbox that executes for real and where its runs happen (image, torch version).

    Its containers are labelled with SANDBOX_ENV_OWNER, else ``<owner>-<pid>``: a sandbox reaps its
    owner's leftovers when it starts, so two jobs (two records, a record beside a certify) must
    not share an owner. A crashed job's leftovers: ``sandbox-env reap``."""
    sandbox = make_sandbox(args.mode, owner=os.environ.get("SANDBOX_ENV_OWNER") or f"{owner}-{os.getpid()}")
    return sandbox, {"source": sandbox.mode, **sandbox.provenance()}


def install_command(extra: str) -> str:
    """The one command that installs ``extra`` into the environment this command runs from.

    From a checkout whose .venv runs this command: ``bash scripts/setup.sh EXTRA`` (the README's
    setup); anywhere else, this interpreter's own pip (a bare ``pip`` may be another Python's).
    """
    setup = CHECKOUT / "scripts" / "setup.sh"
    venv = CHECKOUT / ".venv"
    if setup.is_file() and Path(sys.prefix).resolve() == venv.resolve():
        try:
            script = str(setup.relative_to(Path.cwd().resolve()))
        except ValueError:
            script = str(setup)
        return f"bash {shlex.quote(script)} {extra}"
    return f"{shlex.quote(sys.executable)} -m pip install 'sandbox-env[{extra}]'"


def missing_package_message(package: str, what: str = "this command") -> str:
    """One line: which package is missing, which extra brings it, the command that installs it."""
    extra = EXTRAS.get(package)
    if extra is None:
        return f"{what} needs the Python package {package!r}, which is not installed"
    return (f"{what} needs the Python package {package!r} (install extra '{extra}'): "
            f"run `{install_command(extra)}`")
