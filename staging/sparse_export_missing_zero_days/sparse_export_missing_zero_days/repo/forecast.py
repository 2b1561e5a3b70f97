"""Forecasts as the planners get them: expected units of every listed store-item-day of a horizon, one
day ahead, with the history features of features.py taken from the series' days before the day."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from catalog import Catalog, Promotions
from exports import Sales
from features import Standardizer
from timeline import Timeline


class SalesHistory:
    """Each store-item series of the exports: its days and units, in day order."""

    def __init__(self, sales: Sales) -> None:
        order = np.lexsort((sales.day, sales.item.astype(str), sales.store.astype(str)))
        self.series: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}
        keys = list(zip(sales.store[order].tolist(), sales.item[order].tolist()))
        day, units = sales.day[order], sales.units[order]
        start = 0
        for k in range(1, len(keys) + 1):
            if k == len(keys) or keys[k] != keys[start]:
                self.series[keys[start]] = (day[start:k], units[start:k])
                start = k

    def before(self, store: str, item: str, day: int) -> np.ndarray:
        """Units of the series' days before ``day``, oldest first."""
        days, units = self.series.get((store, item), (np.zeros(0, np.int64), np.zeros(0, np.float32)))
        return units[: np.searchsorted(days, day)]


@dataclass
class Forecast:
    store: np.ndarray
    item: np.ndarray
    day: np.ndarray
    units: np.ndarray  # expected units


def history_at(history: SalesHistory, store: np.ndarray, item: np.ndarray, day: np.ndarray,
               lags: tuple[int, ...], roll_window: int) -> np.ndarray:
    """The features of features.history_features for days that have no row yet: lag k is the series'
    k-th latest day, the rolling mean the mean of its latest ``roll_window`` days (0 without history)."""
    out = np.zeros((len(day), len(lags) + 1), dtype=np.float32)
    for r, (s, i, d) in enumerate(zip(store.tolist(), item.tolist(), day.tolist())):
        past = history.before(s, i, d)
        for c, k in enumerate(lags):
            out[r, c] = past[-k] if len(past) >= k else 0.0
        out[r, -1] = past[-roll_window:].sum() / roll_window
    return out


def forecast_days(model: torch.nn.Module, scaler: Standardizer, catalog: Catalog, promos: Promotions,
                  timeline: Timeline, history: SalesHistory, first_day: int, last_day: int,
                  lags: tuple[int, ...], roll_window: int) -> Forecast:
    """One-day-ahead forecasts of every listed store-item-day in [first_day, last_day]."""
    store, item, day = catalog.listed_days(first_day, last_day)
    batch = {
        "history": torch.from_numpy(scaler(history_at(history, store, item, day, lags, roll_window))),
        "weekday": torch.from_numpy(timeline.weekday(day).astype(np.int64)),
        "promo": torch.from_numpy(promos.flags(item, day)),
        "store": torch.tensor([catalog.store_index[s] for s in store.tolist()], dtype=torch.int64),
        "item": torch.tensor([catalog.item_index[s] for s in item.tolist()], dtype=torch.int64),
    }
    mu = torch.exp(model(batch)).detach().numpy()
    return Forecast(store, item, day, mu)
