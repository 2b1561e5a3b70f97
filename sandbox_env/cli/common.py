"""What several commands share: the task registry of --task-root and a sandbox that runs for real."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..sandbox import Sandbox, make_sandbox
from ..suite.tasks import TaskRegistry


def task_registry(args: argparse.Namespace, *, allow_uncertified: bool | None = None) -> TaskRegistry:
    """The tasks under --task-root (default: ./task_repos); ``allow_uncertified``: serve
    variants not yet certified (None: $SANDBOX_ENV_ALLOW_UNCERTIFIED)."""
    return TaskRegistry(Path(args.task_root) if args.task_root else None,
                        allow_uncertified=allow_uncertified)


def real_sandbox(args: argparse.Namespace, owner: str) -> tuple[Sandbox, dict[str, Any]]:
    """A sandbox that executes for real and where its runs happen (image, torch version)."""
    sandbox = make_sandbox(args.mode, owner=owner)
    return sandbox, {"source": sandbox.mode, **sandbox.provenance()}
