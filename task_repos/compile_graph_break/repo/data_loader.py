"""Synthetic equipment-telemetry data.

Each sample is a window of summary statistics from one machine: ``num_features`` readings
whose class-dependent means are mixed through a fixed random projection. A fraction of the
machines report in raw (un-normalised) units, so some samples are much larger than others:
that spread is what the production feed looks like.
"""

from __future__ import annotations

import torch
from torch.utils.data import DataLoader, TensorDataset

from config import Config


def make_telemetry(num_samples: int, cfg: Config, generator: torch.Generator):
    """Return ``(features, labels)`` for ``num_samples`` synthetic machines."""
    centers = torch.randn(cfg.num_classes, cfg.num_features, generator=generator) * 0.6
    mixing = torch.randn(cfg.num_features, cfg.num_features, generator=generator)
    mixing /= cfg.num_features ** 0.5

    labels = torch.randint(0, cfg.num_classes, (num_samples,), generator=generator)
    noise = torch.randn(num_samples, cfg.num_features, generator=generator)
    features = (centers[labels] + noise) @ mixing
    # some machines report raw units: a heavy-tailed per-sample gain
    gain = torch.exp(torch.randn(num_samples, 1, generator=generator) * 0.75)
    return features * gain, labels


def make_loaders(cfg: Config):
    """Build the train and validation loaders (deterministic for a given ``cfg.seed``)."""
    gen = torch.Generator().manual_seed(cfg.seed)
    total = cfg.train_samples + cfg.val_samples
    x, y = make_telemetry(total, cfg, gen)
    train_set = TensorDataset(x[: cfg.train_samples], y[: cfg.train_samples])
    val_set = TensorDataset(x[cfg.train_samples:], y[cfg.train_samples:])
    shuffle_gen = torch.Generator().manual_seed(cfg.seed + 1)
    train_loader = DataLoader(train_set, batch_size=cfg.batch_size, shuffle=True,
                              generator=shuffle_gen, drop_last=True)
    val_loader = DataLoader(val_set, batch_size=cfg.batch_size, shuffle=False)
    return train_loader, val_loader
