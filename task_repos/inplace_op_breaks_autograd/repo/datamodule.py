"""Synthetic telemetry windows: summary features of a sensor window and its fault class.

The labels come from a fixed random teacher network over the features, with a small share of
labels flipped (operators' annotation noise), so the data set is the same for a given
``data_seed`` on every machine.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.utils.data import DataLoader, TensorDataset

from config import TrainConfig


@dataclass
class Loaders:
    train: DataLoader
    val: DataLoader
    num_train: int
    num_val: int


def make_windows(cfg: TrainConfig) -> tuple[torch.Tensor, torch.Tensor]:
    """``train_size + val_size`` feature rows and their fault classes."""
    gen = torch.Generator().manual_seed(cfg.data_seed)
    rows = cfg.train_size + cfg.val_size
    mixing = torch.randn(cfg.num_features, cfg.num_features, generator=gen) / cfg.num_features ** 0.5
    features = torch.randn(rows, cfg.num_features, generator=gen) @ (torch.eye(cfg.num_features) + mixing)
    teacher_in = torch.randn(cfg.num_features, 32, generator=gen) / cfg.num_features ** 0.5
    teacher_out = torch.randn(32, cfg.num_classes, generator=gen)
    labels = (torch.tanh(features @ teacher_in) @ teacher_out).argmax(dim=1)
    flip = torch.rand(rows, generator=gen) < cfg.label_noise
    labels[flip] = torch.randint(0, cfg.num_classes, (int(flip.sum()),), generator=gen)
    return features, labels


def build_loaders(cfg: TrainConfig) -> Loaders:
    features, labels = make_windows(cfg)
    mean, std = features[: cfg.train_size].mean(0), features[: cfg.train_size].std(0)
    features = (features - mean) / std
    train = TensorDataset(features[: cfg.train_size], labels[: cfg.train_size])
    val = TensorDataset(features[cfg.train_size:], labels[cfg.train_size:])
    order = torch.Generator().manual_seed(cfg.seed)
    return Loaders(
        train=DataLoader(train, batch_size=cfg.batch_size, shuffle=True, generator=order),
        val=DataLoader(val, batch_size=256),
        num_train=len(train),
        num_val=len(val),
    )
