"""Synthetic multi-sensor classification data, sharded across data-parallel ranks.

Each sample is a vector of ``num_features`` sensor readings; its label is produced by a
fixed random "teacher" network plus a little label noise, so the task is learnable but not
trivial. Everything is generated from the run seed: no files, no downloads.
"""

from __future__ import annotations

import torch
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

from config import TrainConfig


def _teacher(num_features: int, num_classes: int, gen: torch.Generator):
    w1 = torch.randn(num_features, 64, generator=gen) / num_features**0.5
    w2 = torch.randn(64, num_classes, generator=gen) / 8.0

    def label(x: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        return (torch.tanh(x @ w1) @ w2 + noise).argmax(dim=1)

    return label


def make_datasets(cfg: TrainConfig) -> tuple[TensorDataset, TensorDataset]:
    """Build the train and validation sets (identical on every rank)."""
    gen = torch.Generator().manual_seed(cfg.seed)
    label = _teacher(cfg.num_features, cfg.num_classes, gen)

    def sample(n: int) -> TensorDataset:
        x = torch.randn(n, cfg.num_features, generator=gen)
        x[:, : cfg.num_features // 4] *= 3.0  # a few high-variance channels
        noise = 0.3 * torch.randn(n, cfg.num_classes, generator=gen)
        return TensorDataset(x, label(x, noise))

    return sample(cfg.train_samples), sample(cfg.val_samples)


def build_dataloaders(cfg: TrainConfig, rank: int, world_size: int):
    """Return ``(train_loader, train_sampler, val_loader)`` for this rank's shard."""
    train_set, val_set = make_datasets(cfg)
    train_sampler = DistributedSampler(
        train_set, num_replicas=world_size, rank=rank, shuffle=True, seed=cfg.seed
    )
    val_sampler = DistributedSampler(val_set, num_replicas=world_size, rank=rank, shuffle=False)
    train_loader = DataLoader(train_set, batch_size=cfg.batch_size, sampler=train_sampler)
    val_loader = DataLoader(val_set, batch_size=2 * cfg.batch_size, sampler=val_sampler)
    return train_loader, train_sampler, val_loader
