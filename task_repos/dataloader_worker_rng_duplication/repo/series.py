"""Synthetic multi-channel sensor recordings (periodic load, slow drift, sensor noise)."""

from __future__ import annotations

import numpy as np


def make_recordings(num_series: int, length: int, seed: int) -> np.ndarray:
    """``num_series`` recordings of ``length`` samples, each normalised to zero mean, unit std."""
    rng = np.random.default_rng(seed)
    t = np.arange(length, dtype=np.float64)
    out = np.empty((num_series, length), dtype=np.float32)
    for i in range(num_series):
        freqs = rng.uniform(1.0 / 96, 1.0 / 12, size=3)
        phases = rng.uniform(0, 2 * np.pi, size=3)
        amps = rng.uniform(0.3, 1.0, size=3)
        x = sum(a * np.sin(2 * np.pi * f * t + p) for a, f, p in zip(amps, freqs, phases))
        x = x + rng.normal(0, 0.3) * t / length + rng.normal(0, 0.05, size=length)
        out[i] = (x - x.mean()) / (x.std() + 1e-6)
    return out
