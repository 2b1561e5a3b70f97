"""Builds the recordings, the datasets and their loaders for a run."""

from __future__ import annotations

import torch
from torch.utils.data import DataLoader

from config import TrainConfig
from datasets import AugmentedWindows, FixedWindows
from series import make_recordings


class SensorDataModule:
    def __init__(self, cfg: TrainConfig) -> None:
        self.cfg = cfg
        self.train_set: AugmentedWindows | None = None
        self.val_set: FixedWindows | None = None
        self.shuffle = torch.Generator()

    def setup(self) -> None:
        cfg = self.cfg
        recordings = make_recordings(cfg.num_series, cfg.series_len, seed=cfg.seed)
        held_out = make_recordings(max(1, cfg.num_series // 4), cfg.series_len, seed=cfg.seed + 1)
        self.train_set = AugmentedWindows(recordings, cfg)
        self.val_set = FixedWindows(held_out, cfg, seed=cfg.seed + 2)
        self.shuffle.manual_seed(cfg.seed)  # one stream for the whole run: a new order every epoch

    def train_loader(self) -> DataLoader:
        assert self.train_set is not None, "call setup() first"
        return DataLoader(
            self.train_set,
            batch_size=self.cfg.batch_size,
            shuffle=True,
            num_workers=self.cfg.num_workers,
            generator=self.shuffle,
        )

    def val_loader(self) -> DataLoader:
        assert self.val_set is not None, "call setup() first"
        return DataLoader(self.val_set, batch_size=self.cfg.batch_size, shuffle=False)
