"""Reading and validating the regions' sales exports (data/export/<region>.csv).

Each export is a CSV with the columns date, store, item, units: one row per store-item-day of the
rolling window, written by the region's ERP every night. Returns are netted into a day's units, so a
day can come out negative; the planners count such a day as 0 units sold.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from timeline import Timeline
from utils import get_logger

log = get_logger("shelfcast.exports")
COLUMNS = ["date", "store", "item", "units"]


class ExportError(ValueError):
    pass


@dataclass
class Sales:
    """Rows of one or more exports, as parallel arrays."""

    store: np.ndarray  # str
    item: np.ndarray  # str
    day: np.ndarray  # int64, day number in the window
    units: np.ndarray  # float32

    def __len__(self) -> int:
        return len(self.units)

    def select(self, mask: np.ndarray) -> Sales:
        return Sales(self.store[mask], self.item[mask], self.day[mask], self.units[mask])

    @staticmethod
    def concat(parts: list[Sales]) -> Sales:
        return Sales(*(np.concatenate([getattr(p, k) for p in parts]) for k in ("store", "item", "day", "units")))


def read_export(path: Path, timeline: Timeline) -> Sales:
    with open(path, newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        if header != COLUMNS:
            raise ExportError(f"{path.name}: columns {header}, expected {COLUMNS}")
        rows = list(reader)
    store = np.array([r[1] for r in rows], dtype=object)
    item = np.array([r[2] for r in rows], dtype=object)
    day = np.array([timeline.day(r[0]) for r in rows], dtype=np.int64)
    units = np.array([float(r[3]) for r in rows], dtype=np.float32)
    return Sales(store, item, day, units)


def validate(sales: Sales, region: str, timeline: Timeline, stores: dict[str, str]) -> Sales:
    """Schema and range checks; returns the cleaned rows."""
    foreign = sorted({s for s in sales.store if stores.get(s) != region})
    if foreign:
        raise ExportError(f"{region}: rows of stores outside the region: {foreign}")
    outside = (sales.day < 0) | (sales.day >= timeline.days)
    if outside.any():
        raise ExportError(f"{region}: {int(outside.sum())} rows outside the window")
    keys = np.char.add(np.char.add(sales.store.astype(str), "|"),
                       np.char.add(sales.item.astype(str), np.char.add("|", sales.day.astype(str))))
    if len(np.unique(keys)) != len(keys):
        raise ExportError(f"{region}: duplicate store-item-day rows")
    negative = sales.units < 0
    if negative.any():
        log.warning("%s: %d rows with negative units (net returns) counted as 0", region, int(negative.sum()))
        sales = Sales(sales.store, sales.item, sales.day, np.maximum(sales.units, 0.0).astype(np.float32))
    return sales


def load_sales(data_dir: Path, regions: tuple[str, ...], timeline: Timeline, stores: dict[str, str]) -> Sales:
    parts = []
    for region in regions:
        sales = validate(read_export(data_dir / "export" / f"{region}.csv", timeline), region, timeline, stores)
        log.info("%s: %d rows, %d units", region, len(sales), int(sales.units.sum()))
        parts.append(sales)
    return Sales.concat(parts)
