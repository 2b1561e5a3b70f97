"""Sanity checks of the export before anything trains on it."""

from __future__ import annotations

import torch

from countcast.data.schema import CATEGORICAL, NUMERIC, OFFSET, TARGET
from countcast.data.table import Table


class DataError(ValueError):
    pass


def validate_table(table: Table, cardinalities: dict[str, int]) -> None:
    missing = [c for c in (*CATEGORICAL, *NUMERIC, TARGET, OFFSET) if c not in table.names()]
    if missing:
        raise DataError(f"export lacks columns {missing}")
    if len(table) == 0:
        raise DataError("export is empty")
    y = table[TARGET]
    if bool((y < 0).any()) or bool((y != torch.round(y)).any()):
        raise DataError("units must be non-negative integers")
    for c in NUMERIC:
        if not bool(torch.isfinite(table[c]).all()):
            raise DataError(f"column {c} has non-finite values")
    for c in CATEGORICAL:
        hi = int(table[c].max())
        if int(table[c].min()) < 0 or hi >= cardinalities[c]:
            raise DataError(f"column {c} has codes outside [0, {cardinalities[c]})")
