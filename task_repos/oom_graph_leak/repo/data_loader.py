"""Synthetic tabular regression data and simple in-memory batch iterators.

The production pipeline reads feature tables exported from the warehouse; for
development and CI we generate a table with the same shape and a known,
non-linear target so that training runs without any external data.
"""

from __future__ import annotations

import math
from typing import Iterator

import torch

from config import Config


def _make_projection(n_features: int, generator: torch.Generator) -> dict[str, torch.Tensor]:
    """Fixed random coefficients that define the ground-truth target function."""
    return {
        "linear": torch.randn(n_features, generator=generator) / math.sqrt(n_features),
        "freq": torch.rand(8, generator=generator) * 2.0 + 0.5,
        "pairs": torch.randint(0, n_features, (16, 2), generator=generator),
    }


def _target(features: torch.Tensor, coef: dict[str, torch.Tensor]) -> torch.Tensor:
    """Ground-truth response: linear trend + periodic terms + pairwise interactions."""
    y = features @ coef["linear"]
    y = y + torch.sin(features[:, :8] * coef["freq"]).sum(dim=1) * 0.5
    left, right = coef["pairs"][:, 0], coef["pairs"][:, 1]
    y = y + (features[:, left] * features[:, right]).sum(dim=1) * 0.25
    return y


def _make_split(n_rows: int, cfg: Config, coef: dict[str, torch.Tensor],
                generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    features = torch.randn(n_rows, cfg.n_features, generator=generator)
    noise = torch.randn(n_rows, generator=generator) * cfg.noise_std
    targets = _target(features, coef) + noise
    return features, targets


class TensorBatches:
    """Iterate over (features, targets) mini-batches of in-memory tensors.

    When ``shuffle`` is set, a new permutation is drawn at every pass from a
    generator seeded with ``seed + epoch`` so that runs are reproducible.
    """

    def __init__(self, features: torch.Tensor, targets: torch.Tensor, batch_size: int,
                 shuffle: bool = False, seed: int = 0) -> None:
        if features.shape[0] != targets.shape[0]:
            raise ValueError("features and targets must have the same number of rows")
        self.features = features
        self.targets = targets
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.seed = seed
        self.epoch = 0

    @property
    def num_rows(self) -> int:
        return self.features.shape[0]

    def __len__(self) -> int:
        return math.ceil(self.num_rows / self.batch_size)

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        if self.shuffle:
            gen = torch.Generator().manual_seed(self.seed + self.epoch)
            order = torch.randperm(self.num_rows, generator=gen)
            for start in range(0, self.num_rows, self.batch_size):
                idx = order[start:start + self.batch_size]
                yield self.features[idx], self.targets[idx]
        else:
            for start in range(0, self.num_rows, self.batch_size):
                stop = start + self.batch_size
                yield self.features[start:stop], self.targets[start:stop]


def build_loaders(cfg: Config) -> tuple[TensorBatches, TensorBatches]:
    """Generate the train/validation tables and wrap them in batch iterators.

    Targets are standardised with the training-set statistics.
    """
    generator = torch.Generator().manual_seed(cfg.seed)
    coef = _make_projection(cfg.n_features, generator)
    train_x, train_y = _make_split(cfg.n_train, cfg, coef, generator)
    val_x, val_y = _make_split(cfg.n_val, cfg, coef, generator)

    mean, std = train_y.mean(), train_y.std()
    train_y = (train_y - mean) / std
    val_y = (val_y - mean) / std

    train_loader = TensorBatches(train_x, train_y, cfg.train_batch_size, shuffle=True, seed=cfg.seed)
    val_loader = TensorBatches(val_x, val_y, cfg.eval_batch_size, shuffle=False)
    return train_loader, val_loader
