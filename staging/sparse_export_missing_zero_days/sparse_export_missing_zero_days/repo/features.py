"""Model inputs of each store-item-day: history features (lagged units, a rolling mean), the weekday,
the promotion flag and the store and item ids."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from catalog import Catalog, Promotions
from exports import Sales
from timeline import Timeline


@dataclass
class Examples:
    history: np.ndarray  # (n, len(lags) + 1) float32: lagged units, then the rolling mean
    weekday: np.ndarray  # (n,) int64
    promo: np.ndarray  # (n,) float32
    store: np.ndarray  # (n,) int64 index into Catalog.stores
    item: np.ndarray  # (n,) int64 index into Catalog.items
    day: np.ndarray  # (n,) int64
    units: np.ndarray  # (n,) float32 target
    region: np.ndarray  # (n,) str

    def __len__(self) -> int:
        return len(self.units)

    def select(self, mask: np.ndarray) -> Examples:
        return Examples(**{k: v[mask] for k, v in vars(self).items()})


def series_ids(store: np.ndarray, item: np.ndarray) -> np.ndarray:
    keys = np.char.add(np.char.add(store.astype(str), "|"), item.astype(str))
    return np.unique(keys, return_inverse=True)[1].reshape(-1)


def history_features(sales: Sales, lags: tuple[int, ...], roll_window: int) -> tuple[Sales, np.ndarray]:
    """Lagged units and the mean of the previous ``roll_window`` days, for every row that has enough
    history. Rows are sorted by series and day; a series has one row per listed day, so within a
    series the row k places back is day t - k. Returns the rows that have every feature (in series,
    day order) and their features."""
    sid = series_ids(sales.store, sales.item)
    order = np.lexsort((sales.day, sid))
    sid, sales = sid[order], sales.select(order)
    first = np.r_[0, np.flatnonzero(np.diff(sid)) + 1]
    pos = np.arange(len(sid)) - np.repeat(first, np.diff(np.r_[first, len(sid)]))
    need = max(max(lags), roll_window)
    keep = pos >= need
    rows = np.flatnonzero(keep)
    cols = [sales.units[rows - k] for k in lags]
    csum = np.r_[0.0, np.cumsum(sales.units, dtype=np.float64)]
    cols.append(((csum[rows] - csum[rows - roll_window]) / roll_window).astype(np.float32))
    return sales.select(keep), np.stack(cols, axis=1).astype(np.float32)


def build_examples(sales: Sales, catalog: Catalog, promos: Promotions, timeline: Timeline,
                   lags: tuple[int, ...], roll_window: int) -> Examples:
    rows, hist = history_features(sales, lags, roll_window)
    return Examples(
        history=hist,
        weekday=timeline.weekday(rows.day).astype(np.int64),
        promo=promos.flags(rows.item, rows.day),
        store=np.array([catalog.store_index[s] for s in rows.store.tolist()], dtype=np.int64),
        item=np.array([catalog.item_index[s] for s in rows.item.tolist()], dtype=np.int64),
        day=rows.day,
        units=rows.units,
        region=np.array([catalog.region_of[s] for s in rows.store.tolist()], dtype=object),
    )


class Standardizer:
    """log1p, then z-scores with the training rows' mean and standard deviation."""

    def __init__(self) -> None:
        self.mean: np.ndarray | None = None
        self.std: np.ndarray | None = None

    def fit(self, x: np.ndarray) -> Standardizer:
        z = np.log1p(x)
        self.mean, self.std = z.mean(axis=0), z.std(axis=0) + 1e-6
        return self

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return ((np.log1p(x) - self.mean) / self.std).astype(np.float32)
