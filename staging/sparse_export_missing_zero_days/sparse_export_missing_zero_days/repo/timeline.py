"""Calendar of the export window: ISO dates <-> day numbers (0 = the window's first day)."""

from __future__ import annotations

import datetime as dt

import numpy as np


class Timeline:
    def __init__(self, start: str, days: int) -> None:
        self.start = dt.date.fromisoformat(start)
        self.days = days

    def day(self, iso: str) -> int:
        return (dt.date.fromisoformat(iso) - self.start).days

    def date(self, day: int) -> str:
        return (self.start + dt.timedelta(days=int(day))).isoformat()

    def weekday(self, days: np.ndarray) -> np.ndarray:
        """Monday = 0 ... Sunday = 6."""
        return (np.asarray(days) + self.start.weekday()) % 7

    def contains(self, day: int) -> bool:
        return 0 <= day < self.days

    def holdout_start(self, holdout_days: int) -> int:
        return self.days - holdout_days
