"""Saving and loading training checkpoints."""

from __future__ import annotations

import copy
import hashlib
import os
from pathlib import Path

import torch
from torch import nn


def save_checkpoint(path: str | os.PathLike, model: nn.Module, epoch: int,
                    metrics: dict[str, float]) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    state = copy.deepcopy(model.state_dict())
    torch.save({"model": state, "epoch": epoch, "metrics": dict(metrics)}, path)


def load_checkpoint(path: str | os.PathLike) -> dict:
    return torch.load(path, weights_only=True)


def state_digest(state: dict[str, torch.Tensor]) -> str:
    """Short content hash of a state_dict (names, parameters and buffers), for comparing runs."""
    h = hashlib.sha256()
    for name, tensor in state.items():
        h.update(name.encode())
        h.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()[:12]
