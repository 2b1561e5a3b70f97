"""Feature preparation: numeric columns standardised with training statistics."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from countcast.data.schema import NUMERIC
from countcast.data.table import Table


@dataclass
class Standardizer:
    mean: dict[str, float]
    std: dict[str, float]

    @classmethod
    def fit(cls, table: Table, columns=NUMERIC) -> Standardizer:
        mean, std = {}, {}
        for c in columns:
            x = table[c].double()
            mean[c] = float(x.mean())
            sd = float(x.std(unbiased=False))
            std[c] = sd if sd > 1e-8 else 1.0
        return cls(mean, std)

    def transform(self, table: Table) -> Table:
        out = {}
        for c in self.mean:
            out[c] = ((table[c].double() - self.mean[c]) / self.std[c]).float()
        return table.with_columns(**out)

    def state(self) -> dict:
        return {"mean": dict(self.mean), "std": dict(self.std)}
