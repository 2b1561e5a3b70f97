"""Per-window sensor features of the line-fault recordings (synthetic stand-in for the CPU smoke run).

Each row is one window of a line sensor: channel statistics on very different scales (currents,
temperatures, vibration bands), labelled with one of ``n_classes`` fault codes.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler, TensorDataset

from config import TrainConfig


def make_windows(cfg: TrainConfig) -> tuple[TensorDataset, TensorDataset]:
    g = torch.Generator().manual_seed(cfg.data_seed)
    centers = torch.randn(cfg.n_classes, cfg.n_features, generator=g) * 1.5
    scale = torch.exp(torch.randn(cfg.n_features, generator=g) * 1.2)  # channel units
    offset = torch.randn(cfg.n_features, generator=g) * 4.0

    def draw(n: int) -> TensorDataset:
        y = torch.randint(0, cfg.n_classes, (n,), generator=g)
        x = centers[y] + cfg.noise * torch.randn(n, cfg.n_features, generator=g)
        return TensorDataset(x * scale + offset, y)

    return draw(cfg.n_train), draw(cfg.n_val)


class WindowData:
    """Train/validation splits and their loaders; in a process group every loader is sharded."""

    def __init__(self, cfg: TrainConfig) -> None:
        self.cfg = cfg
        self.train_set, self.val_set = make_windows(cfg)

    def _loader(self, ds: Dataset, shuffle: bool) -> DataLoader:
        sampler = None
        if dist.is_available() and dist.is_initialized():
            sampler = DistributedSampler(ds, shuffle=shuffle, seed=self.cfg.seed)
            shuffle = False
        gen = torch.Generator().manual_seed(self.cfg.seed)
        return DataLoader(ds, batch_size=self.cfg.batch_size, shuffle=shuffle, sampler=sampler,
                          generator=gen, drop_last=False)

    def train_loader(self) -> DataLoader:
        return self._loader(self.train_set, shuffle=True)

    def val_loader(self) -> DataLoader:
        return self._loader(self.val_set, shuffle=False)
