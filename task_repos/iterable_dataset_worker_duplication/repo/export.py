"""The nightly export: synthetic stand-in for the events table, written as CSV shards.

Every record has a stable ``record_id`` (its row number in the table), ``num_features``
numeric features and a binary label. Shards are cut at uneven row boundaries, the way the
warehouse's daily partitions come out, and ``manifest.json`` lists them with their row counts.
"""

from __future__ import annotations

import csv
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import torch

MANIFEST = "manifest.json"


@dataclass(frozen=True)
class ShardInfo:
    path: str
    records: int


@dataclass(frozen=True)
class Manifest:
    root: str
    num_records: int
    num_features: int
    shards: tuple[ShardInfo, ...]

    @property
    def paths(self) -> list[str]:
        return [s.path for s in self.shards]


def _cut_points(n: int, parts: int, gen: torch.Generator) -> list[int]:
    weights = torch.rand(parts, generator=gen) + 0.5
    sizes = (weights / weights.sum() * n).floor().long()
    sizes[-1] += n - int(sizes.sum())
    return [0, *torch.cumsum(sizes, 0).tolist()]


def write_export(root: str | Path, num_records: int, num_shards: int, num_features: int,
                 label_noise: float, seed: int) -> Manifest:
    root = Path(root)
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    gen = torch.Generator().manual_seed(seed)
    features = torch.randn(num_records, num_features, generator=gen)
    true_w = torch.randn(num_features, generator=gen) / num_features ** 0.5
    logits = features @ true_w + torch.tanh(features[:, 0] * features[:, 1])
    noise = label_noise * torch.randn(num_records, generator=gen)
    labels = (logits + noise > 0).long()
    cuts = _cut_points(num_records, num_shards, gen)
    shards = []
    for i in range(num_shards):
        path = root / f"part-{i:05d}.csv"
        with path.open("w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["record_id", *(f"f{j}" for j in range(num_features)), "label"])
            for r in range(cuts[i], cuts[i + 1]):
                w.writerow([r, *(f"{v:.6f}" for v in features[r].tolist()), int(labels[r])])
        shards.append(ShardInfo(str(path), cuts[i + 1] - cuts[i]))
    manifest = Manifest(str(root), num_records, num_features, tuple(shards))
    (root / MANIFEST).write_text(json.dumps(
        {"num_records": num_records, "num_features": num_features,
         "shards": [{"path": s.path, "records": s.records} for s in shards]}, indent=1))
    return manifest
