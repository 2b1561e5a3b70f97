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
        print(f"error: {exc}", file=sys.stderr)
        return 2
