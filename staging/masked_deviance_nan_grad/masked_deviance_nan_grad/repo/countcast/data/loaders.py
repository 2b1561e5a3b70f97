"""DataLoaders of a member's training rows and of the holdout."""

from __future__ import annotations

import torch
from torch.utils.data import DataLoader

from countcast.data.dataset import CountDataset, collate_rows
from countcast.data.table import Table


def train_loader(table: Table, batch_size: int, gen: torch.Generator) -> DataLoader:
    """Shuffled batches; the order comes from the member's own generator."""
    return DataLoader(CountDataset(table), batch_size=batch_size, shuffle=True, generator=gen,
                      collate_fn=collate_rows, drop_last=False)


def eval_loader(table: Table, batch_size: int) -> DataLoader:
    """Holdout batches in row order."""
    return DataLoader(CountDataset(table), batch_size=batch_size, shuffle=False, collate_fn=collate_rows)
