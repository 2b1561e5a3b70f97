"""Synthetic demand windows: predict the next value of a series from its last ``window`` values.

The training set is fixed by ``data_seed``. Batches are addressed by the global step, so a run
that restarts at step ``s`` sees exactly the batches an uninterrupted run sees from ``s`` on:
each epoch is a permutation drawn from ``(data_seed, epoch)``.
"""

from __future__ import annotations

import math

import torch

from config import TrainConfig


class DemandWindows:
    """All training windows in memory, served one mini-batch per optimisation step."""

    def __init__(self, cfg: TrainConfig) -> None:
        gen = torch.Generator().manual_seed(cfg.data_seed)
        t = torch.arange(cfg.window + 1, dtype=torch.float32)
        phase = torch.rand(cfg.num_series, 1, generator=gen) * 2 * math.pi
        period = 6.0 + 18.0 * torch.rand(cfg.num_series, 1, generator=gen)
        level = 1.0 + torch.rand(cfg.num_series, 1, generator=gen)
        trend = 0.02 * torch.randn(cfg.num_series, 1, generator=gen)
        series = level + trend * t + 0.5 * torch.sin(2 * math.pi * t / period + phase)
        series = series + cfg.noise_std * torch.randn(series.shape, generator=gen)
        self.inputs = series[:, :-1].contiguous()
        self.targets = series[:, -1].contiguous()
        self.batch_size = cfg.batch_size
        self.data_seed = cfg.data_seed
        self.batches_per_epoch = cfg.num_series // cfg.batch_size

    def __len__(self) -> int:
        return self.inputs.shape[0]

    def _order(self, epoch: int) -> torch.Tensor:
        gen = torch.Generator().manual_seed(self.data_seed * 1000 + epoch)
        return torch.randperm(len(self), generator=gen)

    def batch(self, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The mini-batch of global step ``step`` (0-based)."""
        epoch, index = divmod(step, self.batches_per_epoch)
        rows = self._order(epoch)[index * self.batch_size:(index + 1) * self.batch_size]
        return self.inputs[rows], self.targets[rows]

    def holdout(self, rows: int = 256) -> tuple[torch.Tensor, torch.Tensor]:
        """A fixed evaluation slice (the first ``rows`` series)."""
        return self.inputs[:rows], self.targets[:rows]
