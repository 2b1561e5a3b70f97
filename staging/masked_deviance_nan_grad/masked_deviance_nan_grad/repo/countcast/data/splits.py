"""Holdout split and per-member bags."""

from __future__ import annotations

import torch

from countcast.data.table import Table
from countcast.utils.seeding import generator


def holdout_split(table: Table, fraction: float, seed: int) -> tuple[Table, Table]:
    """A random row split fixed by the data seed, so every member and every night scores on the
    same holdout rows."""
    g = generator(seed + 1)
    perm = torch.randperm(len(table), generator=g)
    n_hold = max(1, int(round(fraction * len(table))))
    return table.take(perm[n_hold:].sort().values), table.take(perm[:n_hold].sort().values)


def member_bag(table: Table, fraction: float, seed: int) -> Table:
    """The rows one ensemble member trains on: a subsample without replacement."""
    if fraction >= 1.0:
        return table
    g = generator(seed)
    n = max(1, int(round(fraction * len(table))))
    return table.take(torch.randperm(len(table), generator=g)[:n].sort().values)
