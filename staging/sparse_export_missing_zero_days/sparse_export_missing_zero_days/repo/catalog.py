"""The catalogue team's files: stores (data/stores.csv), listings (data/catalog.csv: which item a store
sells from which day to which day) and promotions (data/promos.csv)."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from timeline import Timeline


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def read_stores(data_dir: Path) -> dict[str, str]:
    """store -> region."""
    return {r["store"]: r["region"] for r in _rows(data_dir / "stores.csv")}


@dataclass
class Listing:
    store: str
    item: str
    first: int  # first listed day (inclusive)
    last: int  # last listed day (inclusive)


class Catalog:
    def __init__(self, data_dir: Path, timeline: Timeline, regions: tuple[str, ...]) -> None:
        self.region_of = read_stores(data_dir)
        self.listings = [Listing(r["store"], r["item"], max(timeline.day(r["listed_from"]), 0),
                                 min(timeline.day(r["listed_to"]), timeline.days - 1))
                         for r in _rows(data_dir / "catalog.csv") if self.region_of[r["store"]] in regions]
        self.stores = sorted({x.store for x in self.listings})
        self.items = sorted({x.item for x in self.listings})
        self.store_index = {s: i for i, s in enumerate(self.stores)}
        self.item_index = {s: i for i, s in enumerate(self.items)}

    def listed_days(self, first_day: int, last_day: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every listed store-item-day with first_day <= day <= last_day: (store, item, day) arrays."""
        store, item, day = [], [], []
        for x in self.listings:
            lo, hi = max(x.first, first_day), min(x.last, last_day)
            for d in range(lo, hi + 1):
                store.append(x.store)
                item.append(x.item)
                day.append(d)
        return np.array(store, dtype=object), np.array(item, dtype=object), np.array(day, dtype=np.int64)


class Promotions:
    def __init__(self, data_dir: Path, timeline: Timeline) -> None:
        self.spans: dict[str, list[tuple[int, int]]] = {}
        for r in _rows(data_dir / "promos.csv"):
            self.spans.setdefault(r["item"], []).append((timeline.day(r["promo_from"]), timeline.day(r["promo_to"])))

    def flags(self, item: np.ndarray, day: np.ndarray) -> np.ndarray:
        out = np.zeros(len(day), dtype=np.float32)
        for k, (it, d) in enumerate(zip(item.tolist(), day.tolist())):
            out[k] = any(lo <= d <= hi for lo, hi in self.spans.get(it, ()))
        return out
