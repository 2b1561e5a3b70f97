"""Training objective: next-event cross-entropy over the labelled positions."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from collate import IGNORE_INDEX


def token_cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over the positions that have a label (padding is ignored)."""
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
                           ignore_index=IGNORE_INDEX)
