"""Timing of a night's phases."""

from __future__ import annotations

import time
from contextlib import contextmanager


class Stopwatch:
    def __init__(self) -> None:
        self.totals: dict[str, float] = {}

    @contextmanager
    def section(self, name: str):
        start = time.perf_counter()
        try:
            yield
        finally:
            self.totals[name] = self.totals.get(name, 0.0) + time.perf_counter() - start

    def summary(self) -> str:
        return ", ".join(f"{k} {v:.2f}s" for k, v in sorted(self.totals.items(), key=lambda kv: -kv[1]))
