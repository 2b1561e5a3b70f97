"""Batches of records as tensors."""

from __future__ import annotations

import torch

from records import Record


def collate_records(records: list[Record]) -> dict[str, torch.Tensor]:
    return {
        "record_id": torch.tensor([r.record_id for r in records], dtype=torch.long),
        "features": torch.tensor([r.features for r in records], dtype=torch.float32),
        "label": torch.tensor([r.label for r in records], dtype=torch.float32),
    }
