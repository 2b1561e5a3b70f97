"""Process settings and timing for batch workers."""

from __future__ import annotations

import os
import time
from contextlib import contextmanager

import torch


def configure_threads() -> int:
    """Honour COUNTCAST_THREADS (the workers share cores); default: torch's choice."""
    value = os.environ.get("COUNTCAST_THREADS")
    if value:
        torch.set_num_threads(max(1, int(value)))
    return torch.get_num_threads()


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
