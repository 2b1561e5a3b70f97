"""Batching of tickets: right-padded token ids (pad id 0), lengths, labels, ticket ids."""

from __future__ import annotations

import torch

PAD_ID = 0


def pad_batch(items: list[dict]) -> dict[str, torch.Tensor]:
    lengths = torch.tensor([len(it["tokens"]) for it in items], dtype=torch.int64)
    tokens = torch.full((len(items), int(lengths.max())), PAD_ID, dtype=torch.int64)
    for row, it in enumerate(items):
        tokens[row, : len(it["tokens"])] = it["tokens"]
    return {"tokens": tokens, "lengths": lengths,
            "labels": torch.tensor([it["label"] for it in items], dtype=torch.int64),
            "ids": torch.tensor([it["id"] for it in items], dtype=torch.int64)}
