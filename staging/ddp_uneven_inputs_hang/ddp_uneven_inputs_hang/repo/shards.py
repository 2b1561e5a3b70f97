"""Telemetry shard files. In production each depot uploads one file per day to the node-local
store; here the files are synthesised deterministically from ``data_seed`` (same rows, same sizes
on every rank), so runs are reproducible on CPU."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from config import TrainConfig


@dataclass
class Shard:
    name: str
    x: torch.Tensor  # (rows, n_features) float32
    y: torch.Tensor  # (rows,) float32, NaN where the wear label was not measured

    def __len__(self) -> int:
        return int(self.x.shape[0])


def _wear_model(cfg: TrainConfig) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(cfg.data_seed)
    return torch.randn(cfg.n_features, 16, generator=g) / cfg.n_features**0.5, torch.randn(16, generator=g)


def make_shards(cfg: TrainConfig, split: str) -> list[Shard]:
    """The shard files of a split ("train" or "val"), in file-name order."""
    w1, w2 = _wear_model(cfg)
    offset = {"train": 1, "val": 2}[split]
    g = torch.Generator().manual_seed(cfg.data_seed * 10 + offset)
    count = cfg.n_shards if split == "train" else cfg.n_val_shards
    sizes = torch.randint(cfg.min_shard_rows, cfg.max_shard_rows + 1, (count,), generator=g).tolist()
    shards = []
    for i, rows in enumerate(sizes):
        x = torch.randn(rows, cfg.n_features, generator=g)
        y = torch.tanh(x @ w1) @ w2 + 0.1 * torch.randn(rows, generator=g)
        missing = torch.rand(rows, generator=g) < cfg.label_missing_rate
        y = torch.where(missing, torch.full_like(y, float("nan")), y)
        shards.append(Shard(f"{split}/depot-{i:03d}.pt", x.float(), y.float()))
    return shards
