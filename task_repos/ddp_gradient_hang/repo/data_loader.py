"""Synthetic multi-task dataset and the per-rank data pipeline."""

from __future__ import annotations

from typing import Iterator

import torch
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

from config import Config


def make_dataset(cfg: Config) -> TensorDataset:
    """Build a deterministic classification dataset with structured features.

    Features live on a low-dimensional manifold (so that reconstructing them is a
    meaningful auxiliary task) and labels come from a random linear teacher.
    """
    g = torch.Generator().manual_seed(cfg.data_seed)
    latent_dim = max(4, cfg.num_features // 4)
    latent = torch.randn(cfg.num_samples, latent_dim, generator=g)
    mixing = torch.randn(latent_dim, cfg.num_features, generator=g) / latent_dim ** 0.5
    features = torch.tanh(latent @ mixing)
    features = features + cfg.noise_std * torch.randn(features.shape, generator=g)
    teacher = torch.randn(latent_dim, cfg.num_classes, generator=g)
    labels = (latent @ teacher).argmax(dim=1)
    return TensorDataset(features.float(), labels.long())


def build_loader(cfg: Config, rank: int, world_size: int) -> tuple[DataLoader, DistributedSampler]:
    """Shard the dataset across ranks with a DistributedSampler."""
    dataset = make_dataset(cfg)
    sampler = DistributedSampler(
        dataset, num_replicas=world_size, rank=rank, shuffle=True, seed=cfg.seed, drop_last=True
    )
    loader = DataLoader(dataset, batch_size=cfg.batch_size, sampler=sampler, drop_last=True)
    return loader, sampler


def infinite_batches(loader: DataLoader, sampler: DistributedSampler) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Yield batches forever, reshuffling at every epoch boundary."""
    epoch = 0
    while True:
        sampler.set_epoch(epoch)
        for batch in loader:
            yield batch
        epoch += 1
