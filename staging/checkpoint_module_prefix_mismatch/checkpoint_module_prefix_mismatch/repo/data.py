"""Synthetic account-activity features (raw units: minutes, euros, counts) and churn segments."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from config import TrainConfig


@dataclass
class Split:
    x: torch.Tensor
    y: torch.Tensor

    def __len__(self) -> int:
        return len(self.y)


def make_splits(cfg: TrainConfig) -> tuple[Split, Split]:
    g = torch.Generator().manual_seed(cfg.data_seed)
    n = cfg.n_train + cfg.n_val
    y = torch.randint(0, cfg.n_classes, (n,), generator=g)
    centers = torch.randn(cfg.n_classes, cfg.n_features, generator=g) * 1.2
    unit_scale = torch.rand(cfg.n_features, generator=g) * 40 + 5
    unit_offset = torch.rand(cfg.n_features, generator=g) * 300 - 60
    z = centers[y] + torch.randn(n, cfg.n_features, generator=g)
    x = z * unit_scale + unit_offset
    return Split(x[: cfg.n_train], y[: cfg.n_train]), Split(x[cfg.n_train:], y[cfg.n_train:])


def batches(split: Split, batch_size: int, generator: torch.Generator | None = None, drop_last: bool = False):
    n = len(split)
    order = torch.randperm(n, generator=generator) if generator is not None else torch.arange(n)
    stop = n - n % batch_size if drop_last else n
    for i in range(0, stop, batch_size):
        idx = order[i:i + batch_size]
        yield split.x[idx], split.y[idx]
