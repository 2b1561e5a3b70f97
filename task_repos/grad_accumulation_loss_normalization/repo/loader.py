"""Micro-batches of sessions, reshuffled every epoch."""

from __future__ import annotations

from collections.abc import Iterator

import torch

from collate import Batch, collate_sessions


class SessionLoader:
    """Yields padded micro-batches of ``batch_size`` sessions (the last one may be smaller).

    The order is a permutation drawn from ``seed`` and the epoch, so every run of a config sees
    the same sessions in the same order whatever its batch size.
    """

    def __init__(self, sessions: list[list[int]], batch_size: int, seed: int, shuffle: bool = True) -> None:
        self.sessions = sessions
        self.batch_size = batch_size
        self.seed = seed
        self.shuffle = shuffle

    def __len__(self) -> int:
        return -(-len(self.sessions) // self.batch_size)

    def order(self, epoch: int) -> list[int]:
        if not self.shuffle:
            return list(range(len(self.sessions)))
        g = torch.Generator().manual_seed(self.seed * 1000 + epoch)
        return torch.randperm(len(self.sessions), generator=g).tolist()

    def epoch(self, epoch: int) -> Iterator[Batch]:
        idx = self.order(epoch)
        for start in range(0, len(idx), self.batch_size):
            yield collate_sessions([self.sessions[i] for i in idx[start:start + self.batch_size]])
