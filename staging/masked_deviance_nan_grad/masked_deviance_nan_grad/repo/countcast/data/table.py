"""A columnar table: named 1-D tensors of equal length."""

from __future__ import annotations

import csv
from collections.abc import Iterable
from pathlib import Path

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

    def sort_by(self, name: str) -> Table:
        return self.take(torch.argsort(self.columns[name], stable=True))

    def unique(self, name: str) -> list:
        return torch.unique(self.columns[name]).tolist()

    def group_sum(self, key: str, value: str) -> dict:
        """Sum of ``value`` per distinct ``key`` (e.g. units per day)."""
        keys, inverse = torch.unique(self.columns[key], return_inverse=True)
        sums = torch.zeros(len(keys), dtype=torch.float64).index_add_(0, inverse, self.columns[value].double())
        return {k: float(s) for k, s in zip(keys.tolist(), sums.tolist())}

    @staticmethod
    def concat(tables: list[Table]) -> Table:
        if not tables:
            raise ValueError("nothing to concatenate")
        names = tables[0].names()
        for t in tables[1:]:
            if t.names() != names:
                raise ValueError(f"columns differ: {names} vs {t.names()}")
        return Table({k: torch.cat([t[k] for t in tables]) for k in names})

    # -- CSV (the planners' exports and the prediction job's output) -------------------------

    def to_csv(self, path: Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        names = self.names()
        cols = [self.columns[k].tolist() for k in names]
        with path.open("w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(names)
            for row in zip(*cols):
                w.writerow([f"{v:.6g}" if isinstance(v, float) else v for v in row])
        return path

    @classmethod
    def from_csv(cls, path: Path, integer: Iterable[str] = ()) -> Table:
        integer = set(integer)
        with Path(path).open(newline="") as fh:
            rows = list(csv.reader(fh))
        if not rows:
            raise ValueError(f"{path}: empty file")
        header, body = rows[0], rows[1:]
        columns = {}
        for j, name in enumerate(header):
            values = [r[j] for r in body]
            if name in integer:
                columns[name] = torch.tensor([int(float(v)) for v in values], dtype=torch.long)
            else:
                columns[name] = torch.tensor([float(v) for v in values], dtype=torch.float32)
        return cls(columns)

