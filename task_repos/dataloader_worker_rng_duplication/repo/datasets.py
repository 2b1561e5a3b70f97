"""Datasets of sensor windows for masked reconstruction.

A sample is a dict: ``values`` (the window with the masked positions zeroed), ``mask`` (True
where the model must reconstruct), ``target`` (the clean, augmented window) and ``series``
(which recording it was cut from).
"""

from __future__ import annotations

import numpy as np
import torch
from torch.utils.data import Dataset

from config import TrainConfig
from transforms import Compose, Jitter, RandomMask, RandomScale, RandomWindow


def _sample(series_id: int, window: np.ndarray, mask: np.ndarray) -> dict[str, torch.Tensor]:
    target = torch.from_numpy(np.ascontiguousarray(window, dtype=np.float32))
    mask_t = torch.from_numpy(mask)
    return {"values": target.masked_fill(mask_t, 0.0), "mask": mask_t, "target": target,
            "series": torch.tensor(series_id)}


class AugmentedWindows(Dataset):
    """Training windows: every item is a fresh random window of one recording, rescaled,
    jittered and masked."""

    def __init__(self, recordings: np.ndarray, cfg: TrainConfig) -> None:
        self.recordings = recordings
        self.length = cfg.train_windows
        self.crop = RandomWindow(cfg.window)
        self.augment = Compose(RandomScale(cfg.scale_low, cfg.scale_high), Jitter(cfg.jitter_std))
        self.masker = RandomMask(cfg.mask_ratio)
        self.rng = np.random.default_rng(cfg.seed)

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        series_id = index % len(self.recordings)
        window = self.crop(self.recordings[series_id], self.rng)
        window = self.augment(window, self.rng)
        mask = self.masker(window.shape[-1], self.rng)
        return _sample(series_id, window, mask)


class FixedWindows(Dataset):
    """Validation windows: offsets and masks drawn once, so every epoch scores the same set."""

    def __init__(self, recordings: np.ndarray, cfg: TrainConfig, seed: int) -> None:
        rng = np.random.default_rng(seed)
        crop, masker = RandomWindow(cfg.window), RandomMask(cfg.mask_ratio)
        self.items = []
        for i in range(cfg.val_windows):
            series_id = i % len(recordings)
            window = crop(recordings[series_id], rng)
            self.items.append(_sample(series_id, window, masker(window.shape[-1], rng)))

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        return self.items[index]
