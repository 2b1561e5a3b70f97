"""Loaders the trainer iterates: a DataLoader plus the bookkeeping of which epoch it serves."""

from __future__ import annotations

from collections.abc import Iterator

from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


class EpochLoader:
    """Iterated once per epoch by the trainer, like a plain DataLoader.

    A DistributedSampler draws its permutation from ``seed + epoch``, so it has to be told the
    epoch before each pass; this wrapper does it, so that the training loop only iterates.
    """

    def __init__(self, loader: DataLoader, epoch: int = 0) -> None:
        self.loader = loader
        self.epoch = epoch

    def __len__(self) -> int:
        return len(self.loader)

    def __iter__(self) -> Iterator[dict]:
        sampler = self.loader.sampler
        if isinstance(sampler, DistributedSampler):
            sampler.set_epoch(self.epoch)
        self.epoch += 1
        return iter(self.loader)


def plain_loader(dataset, batch_size: int, collate_fn) -> DataLoader:
    """Every row in order (validation: each rank scores the whole split)."""
    return DataLoader(dataset, batch_size=batch_size, shuffle=False, collate_fn=collate_fn)
