"""Checkpoint files: atomic writes under the run's checkpoint directory, and reading them back."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import torch

log = logging.getLogger("inspect.ckpt")


def save_checkpoint(state: dict, path: str | os.PathLike) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)
    return path


def load_checkpoint(path: str | os.PathLike, map_location: str = "cpu") -> dict:
    log.info("loading checkpoint %s", path)
    return torch.load(path, map_location=map_location)


def find_resume(ckpt_dir: str, resume: str) -> Path | None:
    """The checkpoint to resume from: an explicit path, the newest in ckpt_dir ("auto"), or none."""
    if not resume:
        return None
    if resume != "auto":
        return Path(resume)
    last = Path(ckpt_dir) / "last.pt"
    return last if last.is_file() else None
