"""Map-style dataset over a :class:`Table` that serves whole batches (``__getitems__``)."""

from __future__ import annotations

import torch
from torch.utils.data import Dataset

from countcast.data.schema import CATEGORICAL, NUMERIC, OFFSET, TARGET
from countcast.data.table import Table


class CountDataset(Dataset):
    def __init__(self, table: Table) -> None:
        self.cat = torch.stack([table[c].long() for c in CATEGORICAL], dim=1)
        self.num = torch.stack([table[c].float() for c in NUMERIC], dim=1)
        self.y = table[TARGET].float()
        self.offset = table[OFFSET].float()

    def __len__(self) -> int:
        return int(self.y.shape[0])

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"cat": self.cat[i], "num": self.num[i], "y": self.y[i], "offset": self.offset[i]}

    def __getitems__(self, idx: list[int]) -> dict[str, torch.Tensor]:
        ix = torch.as_tensor(idx, dtype=torch.long)
        return {"cat": self.cat[ix], "num": self.num[ix], "y": self.y[ix], "offset": self.offset[ix]}


def collate_rows(data):
    """The dataset already returns a batch from ``__getitems__``; single rows (``__getitem__``, e.g.
    from a custom sampler) are stacked."""
    if isinstance(data, dict):
        return data
    return {k: torch.stack([row[k] for row in data]) for k in data[0]}
