"""Checkpoints written by rank 0: the plain model's weights, its config and metrics."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import torch

from config import TrainConfig


def save_checkpoint(path: Path, model: torch.nn.Module, cfg: TrainConfig, epoch: int,
                    metrics: dict[str, float]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    torch.save({"model": state, "config": dataclasses.asdict(cfg), "epoch": epoch, "metrics": metrics},
               path)
    path.with_suffix(".json").write_text(json.dumps({"epoch": epoch, **metrics}, indent=2))


def load_checkpoint(path: Path) -> tuple[dict, TrainConfig, dict[str, float]]:
    ckpt = torch.load(path, map_location="cpu", weights_only=True)
    raw = dict(ckpt["config"])
    raw["callbacks"] = tuple(raw.get("callbacks", ()))
    return ckpt["model"], TrainConfig(**raw), ckpt["metrics"]
