"""Data module: which shard files a rank reads, and the batches it trains on."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterator

import torch

from config import TrainConfig
from shards import Shard, make_shards


@dataclass
class Batch:
    x: torch.Tensor
    y: torch.Tensor
    weight: torch.Tensor  # 1.0 for labelled rows, 0.0 where the label is missing

    @property
    def rows(self) -> int:
        return int(self.x.shape[0])


def to_batch(x: torch.Tensor, y: torch.Tensor) -> Batch:
    labelled = torch.isfinite(y)
    return Batch(x, torch.nan_to_num(y, nan=0.0), labelled.to(x.dtype))


def files_for_rank(shards: list[Shard], rank: int, world_size: int) -> list[Shard]:
    """The files a rank reads: whole files, round-robin over ranks (each file is read by exactly
    one rank, from the node-local store of the node it was scheduled on)."""
    return shards[rank::world_size]


class RankLoader:
    """Shuffled mini-batches over the rows of one rank's files; the last batch may be short."""

    def __init__(self, shards: list[Shard], batch_size: int, seed: int, rank: int, shuffle: bool = True) -> None:
        if shards:
            self.x = torch.cat([s.x for s in shards])
            self.y = torch.cat([s.y for s in shards])
        else:
            self.x, self.y = torch.zeros(0, 1), torch.zeros(0)
        self.batch_size, self.seed, self.rank, self.shuffle = batch_size, seed, rank, shuffle
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    @property
    def rows(self) -> int:
        return int(self.x.shape[0])

    def __len__(self) -> int:
        return math.ceil(self.rows / self.batch_size)

    def __iter__(self) -> Iterator[Batch]:
        if self.shuffle:
            g = torch.Generator().manual_seed(self.seed * 1_000_003 + self.epoch * 1009 + self.rank)
            order = torch.randperm(self.rows, generator=g)
        else:
            order = torch.arange(self.rows)
        for start in range(0, self.rows, self.batch_size):
            idx = order[start:start + self.batch_size]
            yield to_batch(self.x[idx], self.y[idx])


class TelemetryDataModule:
    def __init__(self, cfg: TrainConfig, rank: int, world_size: int) -> None:
        self.cfg, self.rank, self.world_size = cfg, rank, world_size
        self.train_files = files_for_rank(make_shards(cfg, "train"), rank, world_size)
        self.val_files = files_for_rank(make_shards(cfg, "val"), rank, world_size)

    def train_loader(self) -> RankLoader:
        return RankLoader(self.train_files, self.cfg.batch_size, self.cfg.seed, self.rank)

    def val_loader(self) -> RankLoader:
        return RankLoader(self.val_files, 256, self.cfg.seed, self.rank, shuffle=False)
