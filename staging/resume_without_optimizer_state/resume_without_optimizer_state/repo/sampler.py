"""Epoch shuffling for the training loader."""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch.utils.data import Sampler


class EpochShuffleSampler(Sampler[int]):
    """A new random order of the dataset every epoch.

    The orders come from the sampler's own generator, seeded with the data seed, so two runs with
    the same data seed see the same batches in the same order whatever else in the process draws
    random numbers (model init, other libraries).
    """

    def __init__(self, num_samples: int, seed: int) -> None:
        self.num_samples = num_samples
        self.seed = seed
        self.generator = torch.Generator().manual_seed(seed)

    def __len__(self) -> int:
        return self.num_samples

    def __iter__(self) -> Iterator[int]:
        order = torch.randperm(self.num_samples, generator=self.generator)
        yield from order.tolist()
