"""Tensors and loaders of the examples."""

from __future__ import annotations

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from features import Examples, Standardizer


class DemandDataset(Dataset):
    def __init__(self, examples: Examples, scaler: Standardizer) -> None:
        self.history = torch.from_numpy(scaler(examples.history))
        self.weekday = torch.from_numpy(examples.weekday)
        self.promo = torch.from_numpy(examples.promo)
        self.store = torch.from_numpy(examples.store)
        self.item = torch.from_numpy(examples.item)
        self.units = torch.from_numpy(np.asarray(examples.units, dtype=np.float32))

    def __len__(self) -> int:
        return len(self.units)

    def __getitem__(self, i):
        return {"history": self.history[i], "weekday": self.weekday[i], "promo": self.promo[i],
                "store": self.store[i], "item": self.item[i], "units": self.units[i]}


def train_loader(data: DemandDataset, batch_size: int, seed: int) -> DataLoader:
    generator = torch.Generator().manual_seed(seed)
    return DataLoader(data, batch_size=batch_size, shuffle=True, generator=generator)


def eval_loader(data: DemandDataset, batch_size: int) -> DataLoader:
    return DataLoader(data, batch_size=batch_size, shuffle=False, generator=torch.Generator())
