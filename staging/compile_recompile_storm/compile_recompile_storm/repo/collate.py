"""Batch assembly: pad the sessions of a batch to a common length and build the key mask."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from data import PAD_ID, Session


@dataclass
class Batch:
    events: torch.Tensor  # (B, T) int64, PAD_ID past each session's end
    mask: torch.Tensor  # (B, T) bool, True on real events
    labels: torch.Tensor  # (B,)

    def __len__(self) -> int:
        return int(self.events.shape[0])


class PadCollator:
    """Pads to the longest session of the batch (rounded up to ``pad_to_multiple_of`` if set)."""

    def __init__(self, pad_id: int = PAD_ID, pad_to_multiple_of: int = 0) -> None:
        self.pad_id = pad_id
        self.multiple = pad_to_multiple_of

    def target_length(self, longest: int) -> int:
        if self.multiple:
            return -(-longest // self.multiple) * self.multiple
        return longest

    def __call__(self, sessions: list[Session]) -> Batch:
        length = self.target_length(max(len(s.events) for s in sessions))
        events = torch.full((len(sessions), length), self.pad_id, dtype=torch.long)
        for row, s in enumerate(sessions):
            events[row, : len(s.events)] = torch.tensor(s.events, dtype=torch.long)
        labels = torch.tensor([s.label for s in sessions], dtype=torch.long)
        return Batch(events, events != self.pad_id, labels)
