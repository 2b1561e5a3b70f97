"""Accuracy figures the planners read: WAPE and forecast / actual ratios."""

from __future__ import annotations

import numpy as np


def wape(forecast: np.ndarray, actual: np.ndarray) -> float:
    return float(np.abs(forecast - actual).sum() / max(actual.sum(), 1e-9))


def ratio(forecast: float, actual: float) -> float:
    return float(forecast / max(actual, 1e-9))


def by_group(values: np.ndarray, groups: np.ndarray) -> dict[str, float]:
    return {str(g): float(values[groups == g].sum()) for g in sorted(set(groups.tolist()))}
