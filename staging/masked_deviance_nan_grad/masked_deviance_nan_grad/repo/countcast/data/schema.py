"""Columns of the demand export."""

from __future__ import annotations

from dataclasses import dataclass

CATEGORICAL = ("store", "item", "dow")
NUMERIC = ("log_price", "promo", "temp")
TARGET = "units"
OFFSET = "offset"   # log-exposure of the row: 0 for a whole store-day


@dataclass(frozen=True)
class Cardinalities:
    store: int
    item: int
    dow: int = 7

    def as_dict(self) -> dict[str, int]:
        return {"store": self.store, "item": self.item, "dow": self.dow}
