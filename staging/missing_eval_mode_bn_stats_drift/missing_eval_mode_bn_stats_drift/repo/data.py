"""Synthetic account-activity table with churn-risk labels, and its data loaders.

Production reads a feature export from the warehouse; development and CI use a
generated table with the same shape: numeric usage features on different
scales, and a label that depends non-linearly on a few of them.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.utils.data import DataLoader, TensorDataset

from config import Config


@dataclass
class Splits:
    train: TensorDataset
    val: TensorDataset
    test: TensorDataset


def _feature_scales(n_features: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-column offset and scale: raw usage counters are far from standardised."""
    offset = torch.randn(n_features, generator=generator) * 3.0
    scale = torch.rand(n_features, generator=generator) * 4.0 + 0.5
    return offset, scale


def _make_rows(n_rows: int, cfg: Config, weights: torch.Tensor, offset: torch.Tensor,
               scale: torch.Tensor, generator: torch.Generator) -> TensorDataset:
    latent = torch.randn(n_rows, cfg.n_features, generator=generator)
    scores = latent @ weights + 0.5 * torch.sin(2.0 * latent[:, : cfg.n_classes])
    labels = scores.argmax(dim=1)
    flip = torch.rand(n_rows, generator=generator) < cfg.label_noise
    labels[flip] = torch.randint(0, cfg.n_classes, (int(flip.sum()),), generator=generator)
    return TensorDataset(latent * scale + offset, labels)


def make_splits(cfg: Config) -> Splits:
    generator = torch.Generator().manual_seed(cfg.data_seed)
    weights = torch.randn(cfg.n_features, cfg.n_classes, generator=generator)
    offset, scale = _feature_scales(cfg.n_features, generator)
    train = _make_rows(cfg.n_train, cfg, weights, offset, scale, generator)
    val = _make_rows(cfg.n_val, cfg, weights, offset, scale, generator)
    test = _make_rows(cfg.n_test, cfg, weights, offset, scale, generator)
    return Splits(train, val, test)


def _loader(dataset: TensorDataset, batch_size: int, shuffle_seed: int | None = None) -> DataLoader:
    """Batches in file order, or reshuffled every pass by a generator of their own."""
    if shuffle_seed is None:
        return DataLoader(dataset, batch_size=batch_size)
    return DataLoader(dataset, batch_size=batch_size, shuffle=True,
                      generator=torch.Generator().manual_seed(shuffle_seed))


def build_loaders(cfg: Config, splits: Splits) -> dict[str, DataLoader]:
    """Shuffled training batches; validation and test in a fixed order."""
    return {
        "train": _loader(splits.train, cfg.batch_size, shuffle_seed=cfg.seed),
        "val": _loader(splits.val, cfg.eval_batch_size),
        "test": _loader(splits.test, cfg.eval_batch_size),
    }
