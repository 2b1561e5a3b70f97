"""The sandbox-env command: parse the arguments, set the runtime, run the command, map its errors.

parser.py holds every command and flag; the commands live by job in episodes.py (serve, tasks,
run, play), operations.py (images, runner, reap, doctor, record, certify, fidelity, heldout) and
evaluation.py (agent, eval, report).
"""

from __future__ import annotations

import logging
import os
import sys

from ..errors import VariantNotCertified
from ..sandbox import SandboxUnavailable
from ..sandbox.docker.runtime import RUNTIME_ENV
from ..suite.tasks import TaskError, UnknownTask
from .common import EXTRAS, missing_package_message
from .parser import build_parser

__all__ = ["build_parser", "main"]


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    args = build_parser().parse_args(argv)
    if getattr(args, "runtime", None):  # read by the docker backend wherever it is built
        os.environ[RUNTIME_ENV] = args.runtime
    try:
        return int(args.fn(args) or 0)
    except (UnknownTask, TaskError, SandboxUnavailable, VariantNotCertified) as exc:
        print(f"error: {exc}{_install_hint(str(exc))}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:  # an optional package: one line naming its install command
        package = (exc.name or "").partition(".")[0]
        if package not in EXTRAS:
            raise
        print(f"error: {missing_package_message(package, f'sandbox-env {args.cmd}')}", file=sys.stderr)
        return 2


def _install_hint(message: str) -> str:
    """For a backend unavailable because its Python package is missing: how to install it."""
    for package in ("docker", "ray"):
        if f"{package} Python package is not installed" in message or (
                package == "ray" and "Ray is not installed" in message):
            return f"; {missing_package_message(package, 'this mode')}"
    return ""
