"""Validation: every rank scores its own validation files; the sums are reduced over ranks."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from data import RankLoader
from metrics import EpochMeter


@torch.no_grad()
def validate(model: torch.nn.Module, loader: RankLoader, delta: float) -> dict[str, float]:
    was_training = model.training
    model.eval()
    meter = EpochMeter()
    for batch in loader:
        per_row = F.huber_loss(model(batch.x), batch.y, reduction="none", delta=delta) * batch.weight
        meter.update(float(per_row.sum()), float(batch.weight.sum()))
    model.train(was_training)
    return meter.reduce()
