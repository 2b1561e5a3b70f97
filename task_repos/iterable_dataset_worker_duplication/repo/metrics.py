"""What one pass over the export saw and how well the scorer did on it."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import torch


@dataclass
class PassStats:
    epoch: int
    batches: int = 0
    records: int = 0
    loss_sum: float = 0.0
    correct: int = 0
    ids: Counter = field(default_factory=Counter)

    def update(self, batch: dict[str, torch.Tensor], logits: torch.Tensor, loss_sum: torch.Tensor) -> None:
        self.batches += 1
        self.records += int(batch["label"].numel())
        self.loss_sum += float(loss_sum)
        self.correct += int(((logits > 0).float() == batch["label"]).sum())
        self.ids.update(batch["record_id"].tolist())

    def mean_loss(self, denominator: int) -> float:
        return self.loss_sum / max(1, denominator)

    def accuracy(self) -> float:
        return self.correct / max(1, self.records)

    def repeated_ids(self) -> int:
        return sum(1 for c in self.ids.values() if c > 1)
