"""Synthetic demand series: predict the next value of a series from its last ``window`` values.

The series are fixed by ``data_seed`` (level, trend, a seasonal cycle and noise per series).
"""

from __future__ import annotations

import math

import torch
from torch.utils.data import Dataset

from config import TrainConfig
from transforms import WindowTransform


def synthetic_series(cfg: TrainConfig) -> torch.Tensor:
    gen = torch.Generator().manual_seed(cfg.data_seed)
    t = torch.arange(cfg.window + 1, dtype=torch.float32)
    phase = torch.rand(cfg.num_series, 1, generator=gen) * 2 * math.pi
    period = 6.0 + 18.0 * torch.rand(cfg.num_series, 1, generator=gen)
    level = 1.0 + torch.rand(cfg.num_series, 1, generator=gen)
    trend = 0.02 * torch.randn(cfg.num_series, 1, generator=gen)
    series = level + trend * t + 0.5 * torch.sin(2 * math.pi * t / period + phase)
    return series + cfg.noise_std * torch.randn(series.shape, generator=gen)


class DemandWindows(Dataset):
    """One (window, next value) pair per series, transformed for the model."""

    def __init__(self, cfg: TrainConfig, transform: WindowTransform | None = None) -> None:
        series = synthetic_series(cfg)
        self.inputs = series[:, :-1].contiguous()
        self.targets = series[:, -1].contiguous()
        self.transform = transform or WindowTransform(cfg.normalize)

    def __len__(self) -> int:
        return self.inputs.shape[0]

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.transform(self.inputs[index], self.targets[index])

    def holdout(self, rows: int) -> tuple[torch.Tensor, torch.Tensor]:
        """A fixed evaluation slice (the first ``rows`` series), transformed."""
        pairs = [self[i] for i in range(min(rows, len(self)))]
        return torch.stack([x for x, _ in pairs]), torch.stack([y for _, y in pairs])
