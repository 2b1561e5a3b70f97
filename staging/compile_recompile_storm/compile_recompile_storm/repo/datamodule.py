"""Datasets and loaders for training and validation."""

from __future__ import annotations

import torch

from collate import PadCollator
from config import TrainConfig
from data import SessionDataset, make_splits
from sampler import LengthGroupedBatchSampler


class SessionDataModule:
    def __init__(self, cfg: TrainConfig) -> None:
        self.cfg = cfg
        self.train_set: SessionDataset | None = None
        self.val_set: SessionDataset | None = None
        self.collate = PadCollator(pad_to_multiple_of=cfg.pad_to_multiple_of)

    def setup(self) -> None:
        self.train_set, self.val_set = make_splits(self.cfg)
        self.train_sampler = LengthGroupedBatchSampler(self.train_set.lengths(), self.cfg.batch_size,
                                                       self.cfg.group_size, self.cfg.seed)

    def train_loader(self, epoch: int) -> torch.utils.data.DataLoader:
        self.train_sampler.set_epoch(epoch)
        return torch.utils.data.DataLoader(self.train_set, batch_sampler=self.train_sampler,
                                           collate_fn=self.collate)

    def val_loader(self) -> torch.utils.data.DataLoader:
        sampler = LengthGroupedBatchSampler(self.val_set.lengths(), self.cfg.batch_size, 1, 0, shuffle=False)
        return torch.utils.data.DataLoader(self.val_set, batch_sampler=sampler, collate_fn=self.collate)
