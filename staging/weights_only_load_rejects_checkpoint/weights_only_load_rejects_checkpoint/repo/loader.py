"""Mini-batches over a split: numpy shuffling and feature jitter (the global numpy generator)."""

from __future__ import annotations

from typing import Iterator

import numpy as np
import torch


class BatchLoader:
    def __init__(self, x: np.ndarray, y: np.ndarray, batch_size: int, shuffle: bool, noise_std: float = 0.0) -> None:
        self.x, self.y = x, y
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.noise_std = noise_std

    def __len__(self) -> int:
        return (len(self.y) + self.batch_size - 1) // self.batch_size

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        order = np.random.permutation(len(self.y)) if self.shuffle else np.arange(len(self.y))
        for lo in range(0, len(order), self.batch_size):
            idx = order[lo:lo + self.batch_size]
            xb = self.x[idx]
            if self.noise_std > 0:
                xb = xb + np.random.normal(0.0, self.noise_std, size=xb.shape).astype(np.float32)
            yield torch.from_numpy(np.ascontiguousarray(xb)), torch.from_numpy(self.y[idx])
