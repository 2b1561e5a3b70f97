"""Padding of ragged sessions into next-token batches."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from corpus import PAD_ID

IGNORE_INDEX = -100  # label value the loss skips (padding, and the last event of a session)


@dataclass
class Batch:
    input_ids: torch.Tensor  # (B, T) token ids, right-padded with PAD_ID
    attention_mask: torch.Tensor  # (B, T) 1 where input_ids holds an event
    labels: torch.Tensor  # (B, T) the next event, IGNORE_INDEX where there is none

    def __len__(self) -> int:
        return int(self.input_ids.shape[0])


def collate_sessions(sessions: list[list[int]]) -> Batch:
    """Right-pads the sessions to the longest one of this batch; position t predicts event t+1."""
    width = max(len(s) for s in sessions)
    input_ids = torch.full((len(sessions), width), PAD_ID, dtype=torch.long)
    labels = torch.full((len(sessions), width), IGNORE_INDEX, dtype=torch.long)
    for i, s in enumerate(sessions):
        ids = torch.tensor(s, dtype=torch.long)
        input_ids[i, : len(s)] = ids
        labels[i, : len(s) - 1] = ids[1:]
    return Batch(input_ids=input_ids, attention_mask=(input_ids != PAD_ID).long(), labels=labels)
