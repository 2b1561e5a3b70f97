"""Synthetic sensor frames: one prototype per defect class plus correlated noise (numpy)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Split:
    x: np.ndarray  # (n, n_features) float32
    y: np.ndarray  # (n,) int64


def make_splits(cfg) -> tuple[Split, Split]:
    plant = np.random.default_rng(cfg.plant_seed)  # the line's sensors and defect signatures
    protos = plant.normal(0.0, 1.0, size=(cfg.n_classes, cfg.n_features))
    mix = plant.normal(0.0, 0.4, size=(cfg.n_features, cfg.n_features))
    scale = plant.uniform(0.5, 20.0, size=cfg.n_features)  # raw sensor units differ wildly
    offset = plant.normal(0.0, 50.0, size=cfg.n_features)

    rng = np.random.default_rng(cfg.data_seed)  # this run's frames

    def draw(n: int) -> Split:
        y = rng.integers(0, cfg.n_classes, size=n)
        z = protos[y] + rng.normal(0.0, 1.1, size=(n, cfg.n_features)) @ mix
        return Split((z * scale + offset).astype(np.float32), y.astype(np.int64))

    return draw(cfg.n_train), draw(cfg.n_val)


class Standardizer:
    """Per-feature standardisation, fitted on the training split of the run that created the model."""

    def __init__(self) -> None:
        self.mean: np.ndarray | None = None
        self.std: np.ndarray | None = None

    def fit(self, x: np.ndarray) -> "Standardizer":
        self.mean = x.mean(axis=0)
        self.std = x.std(axis=0) + 1e-6
        return self

    def __call__(self, x: np.ndarray) -> np.ndarray:
        assert self.mean is not None and self.std is not None, "Standardizer used before fit()"
        return ((x - self.mean) / self.std).astype(np.float32)

    def state_dict(self) -> dict:
        return {"mean": self.mean, "std": self.std}

    def load_state_dict(self, state: dict) -> None:
        self.mean = np.asarray(state["mean"], dtype=np.float32)
        self.std = np.asarray(state["std"], dtype=np.float32)
