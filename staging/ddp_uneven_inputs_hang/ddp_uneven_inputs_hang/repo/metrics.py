"""Epoch metrics, reduced over ranks."""

from __future__ import annotations

import torch

from distributed import all_reduce_sum


class EpochMeter:
    def __init__(self) -> None:
        self.loss_sum = 0.0
        self.labelled = 0.0

    def update(self, loss_sum: float, labelled: float) -> None:
        self.loss_sum += loss_sum
        self.labelled += labelled

    def reduce(self) -> dict[str, float]:
        t = torch.tensor([self.loss_sum, self.labelled], dtype=torch.float64)
        all_reduce_sum(t)
        loss_sum, labelled = t.tolist()
        return {"loss": loss_sum / max(labelled, 1.0), "labelled": labelled}
