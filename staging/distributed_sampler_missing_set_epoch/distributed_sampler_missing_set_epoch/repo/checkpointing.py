"""last.pt: everything a run needs to continue where it stopped (written by rank 0 after each epoch)."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import torch

CHECKPOINT_FORMAT = 1


def save_checkpoint(path: str | Path, trainer) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "format": CHECKPOINT_FORMAT,
        "model": trainer.model.state_dict(),
        "optimizer": trainer.optimizer.state_dict(),
        "scheduler": trainer.scheduler.state_dict(),
        "state": asdict(trainer.state),
        "history": list(trainer.history),
        "config": {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(trainer.cfg).items()},
    }
    tmp = path.with_suffix(".tmp")
    torch.save(payload, tmp)
    tmp.replace(path)
    return path


def load_checkpoint(path: str | Path) -> dict:
    ckpt = torch.load(path, map_location="cpu", weights_only=True)
    if ckpt.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"{path}: checkpoint format {ckpt.get('format')}, expected {CHECKPOINT_FORMAT}")
    return ckpt
