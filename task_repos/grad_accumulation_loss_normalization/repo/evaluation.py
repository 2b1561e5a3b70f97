"""Validation: cross-entropy per labelled token over the whole validation set."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from collate import IGNORE_INDEX
from loader import SessionLoader


@torch.no_grad()
def evaluate(model: torch.nn.Module, loader: SessionLoader) -> float:
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    for batch in loader.epoch(0):
        logits = model(batch.input_ids)
        total += F.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch.labels.reshape(-1),
                                 ignore_index=IGNORE_INDEX, reduction="sum").item()
        count += int((batch.labels != IGNORE_INDEX).sum())
    model.train(was_training)
    return total / max(count, 1)
