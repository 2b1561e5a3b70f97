"""Checkpoint files: what the job publishes and what serving reads."""

from __future__ import annotations

import os
from dataclasses import asdict
from pathlib import Path

import torch

CHECKPOINT_FORMAT = 2


def save_checkpoint(path: str | Path, trainer, metrics: dict[str, float]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "format": CHECKPOINT_FORMAT,
        "model": trainer.net.state_dict(),
        "config": asdict(trainer.cfg),
        "epoch": trainer.epoch,
        "metrics": dict(metrics),
    }
    tmp = path.with_suffix(".tmp")
    torch.save(payload, tmp)
    os.replace(tmp, path)
    return path


def read_checkpoint(path: str | Path) -> dict:
    return torch.load(path, map_location="cpu", weights_only=True)
