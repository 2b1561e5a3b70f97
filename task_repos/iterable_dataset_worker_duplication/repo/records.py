"""Reading records back from the export's CSV shards."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from typing import NamedTuple


class Record(NamedTuple):
    record_id: int
    features: list[float]
    label: float


def read_shard(path: str) -> Iterator[Record]:
    with open(path, newline="") as fh:
        rows = csv.reader(fh)
        next(rows)  # header
        for row in rows:
            yield Record(int(row[0]), [float(v) for v in row[1:-1]], float(row[-1]))
