"""Window augmentations. Each transform takes the window and the generator to draw from."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class RandomWindow:
    """Cut a window of ``length`` samples at a random offset of the recording."""

    length: int

    def __call__(self, series: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        start = int(rng.integers(0, series.shape[-1] - self.length + 1))
        return series[start:start + self.length]


@dataclass
class RandomScale:
    low: float
    high: float

    def __call__(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return x * np.float32(rng.uniform(self.low, self.high))


@dataclass
class Jitter:
    std: float

    def __call__(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return x + rng.normal(0.0, self.std, size=x.shape).astype(np.float32)


@dataclass
class RandomMask:
    """Choose the positions the model has to reconstruct (a fixed fraction of the window)."""

    ratio: float

    def __call__(self, length: int, rng: np.random.Generator) -> np.ndarray:
        k = max(1, int(round(self.ratio * length)))
        mask = np.zeros(length, dtype=bool)
        mask[rng.choice(length, size=k, replace=False)] = True
        return mask


class Compose:
    def __init__(self, *steps) -> None:
        self.steps = steps

    def __call__(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        for step in self.steps:
            x = step(x, rng)
        return x
