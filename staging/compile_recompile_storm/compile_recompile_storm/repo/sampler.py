"""Length-grouped batching: shuffle, then sort each group of ``group_size`` batches by length.

Batches then hold sessions of similar length, so padding each batch to its longest session wastes
little compute; the order of the groups (and of the batches in a group) stays random per epoch.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch


class LengthGroupedBatchSampler(torch.utils.data.Sampler[list[int]]):
    def __init__(self, lengths: list[int], batch_size: int, group_size: int, seed: int, shuffle: bool = True) -> None:
        self.lengths = lengths
        self.batch_size = batch_size
        self.group = batch_size * group_size
        self.seed = seed
        self.shuffle = shuffle
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return (len(self.lengths) + self.batch_size - 1) // self.batch_size

    def __iter__(self) -> Iterator[list[int]]:
        n = len(self.lengths)
        if not self.shuffle:
            order = sorted(range(n), key=lambda i: self.lengths[i])
            yield from (order[s:s + self.batch_size] for s in range(0, n, self.batch_size))
            return
        g = torch.Generator().manual_seed(self.seed + self.epoch)
        perm = torch.randperm(n, generator=g).tolist()
        batches = []
        for s in range(0, n, self.group):
            chunk = sorted(perm[s:s + self.group], key=lambda i: -self.lengths[i])
            batches += [chunk[b:b + self.batch_size] for b in range(0, len(chunk), self.batch_size)]
        for b in torch.randperm(len(batches), generator=g).tolist():
            yield batches[b]
