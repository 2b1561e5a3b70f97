"""`sandbox-env export harbor`: write the task variants as tasks of another harness (docs/harnesses.md)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def add_command(sub: Any) -> None:
    s = sub.add_parser("export", help="write the task variants as tasks of another harness (harbor)")
    s.add_argument("format", choices=["harbor"], help="harbor: one Harbor task folder per family@variant")
    s.add_argument("--out", required=True, type=Path, help="directory to write the task folders into")
    s.add_argument("--split", default="test", choices=["train", "test", "all"],
                   help="the variants of each family in this split (default: test)")
    s.add_argument("--tasks", default=None,
                   help="comma-separated families or family@N ids to keep (default: the whole split)")
    s.set_defaults(fn=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    from ..harnesses.harbor_export import RUNNER_IMAGE, export_harbor

    folders = export_harbor(args.out, split=args.split, tasks=args.tasks, task_root=args.task_root)
    print(json.dumps({"format": args.format, "out": str(args.out), "split": args.split,
                      "image": RUNNER_IMAGE, "tasks": [f.name for f in folders]}, indent=1))
    return 0 if folders else 1
