"""The training DataLoader: shuffled mini-batches of whole windows, the last partial batch dropped."""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch.utils.data import DataLoader

from config import TrainConfig
from dataset import DemandWindows
from sampler import EpochShuffleSampler

Batch = tuple[torch.Tensor, torch.Tensor]


def build_loader(dataset: DemandWindows, cfg: TrainConfig) -> DataLoader:
    sampler = EpochShuffleSampler(len(dataset), cfg.data_seed)
    return DataLoader(dataset, batch_size=cfg.batch_size, sampler=sampler, drop_last=True, num_workers=0)


def skip_batches(loader: DataLoader, count: int) -> Iterator[Batch]:
    """An iterator over one epoch of ``loader`` that starts after its first ``count`` batches."""
    it = iter(loader)
    for _ in range(count):
        next(it)
    return it
