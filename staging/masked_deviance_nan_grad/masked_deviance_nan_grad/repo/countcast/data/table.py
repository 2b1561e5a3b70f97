"""A columnar table: named 1-D tensors of equal length."""

from __future__ import annotations

from collections.abc import Iterable

import torch


class Table:
    def __init__(self, columns: dict[str, torch.Tensor]) -> None:
        lengths = {k: int(v.shape[0]) for k, v in columns.items()}
        if len(set(lengths.values())) > 1:
            raise ValueError(f"columns of unequal length: {lengths}")
        self.columns = dict(columns)

    def __len__(self) -> int:
        return int(next(iter(self.columns.values())).shape[0]) if self.columns else 0

    def __getitem__(self, name: str) -> torch.Tensor:
        return self.columns[name]

    def names(self) -> list[str]:
        return list(self.columns)

    def take(self, idx: torch.Tensor) -> Table:
        return Table({k: v[idx] for k, v in self.columns.items()})

    def where(self, mask: torch.Tensor) -> Table:
        return self.take(torch.nonzero(mask, as_tuple=False).flatten())

    def with_columns(self, **extra: torch.Tensor) -> Table:
        return Table({**self.columns, **extra})

    def select(self, names: Iterable[str]) -> Table:
        return Table({k: self.columns[k] for k in names})

    def describe(self) -> str:
        parts = [f"{len(self)} rows"]
        for k, v in self.columns.items():
            if v.is_floating_point():
                parts.append(f"{k} mean {float(v.mean()):.3g}")
        return ", ".join(parts)
