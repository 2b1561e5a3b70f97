"""The backtest audit of the weekly retrain: forecast the holdout days as the planners would get them
and compare each region's forecast units with the units it sold."""

from __future__ import annotations

import numpy as np

from catalog import Catalog
from exports import Sales
from forecast import Forecast
from metrics import ratio


def region_totals(catalog: Catalog, store: np.ndarray, units: np.ndarray) -> dict[str, float]:
    regions = np.array([catalog.region_of[s] for s in store.tolist()], dtype=object)
    return {r: float(units[regions == r].sum(dtype=np.float64)) for r in sorted(set(catalog.region_of.values()))
            if (regions == r).any()}


def backtest(forecast: Forecast, sales: Sales, catalog: Catalog, first_day: int) -> dict[str, dict[str, float]]:
    actual = sales.select(sales.day >= first_day)
    f = region_totals(catalog, forecast.store, forecast.units)
    a = region_totals(catalog, actual.store, actual.units)
    return {r: {"forecast": f[r], "actual": a.get(r, 0.0), "ratio": ratio(f[r], a.get(r, 0.0))} for r in f}


def failures(audit: dict[str, dict[str, float]], band: float) -> list[str]:
    return [r for r, v in audit.items() if abs(v["ratio"] - 1.0) > band]
