"""Small in-memory exports for the unit tests."""

from __future__ import annotations

import numpy as np

from exports import Sales


def toy_sales(series: dict[tuple[str, str], list[float]], first_day: int = 0) -> Sales:
    """One row per day of each series, from ``first_day`` on."""
    store, item, day, units = [], [], [], []
    for (s, i), values in series.items():
        for k, u in enumerate(values):
            store.append(s)
            item.append(i)
            day.append(first_day + k)
            units.append(u)
    return Sales(np.array(store, dtype=object), np.array(item, dtype=object), np.array(day, dtype=np.int64),
                 np.array(units, dtype=np.float32))
