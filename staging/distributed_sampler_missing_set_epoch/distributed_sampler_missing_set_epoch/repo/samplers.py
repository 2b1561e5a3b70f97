"""Length bucketing: batches of tickets of similar length, so that little of a batch is padding."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from torch.utils.data import Sampler


class BucketBatchSampler(Sampler[list[int]]):
    """Groups the indices of ``sampler`` into batches of similar length.

    The sampler's order is cut into pools of ``pool_batches`` batches; each pool is sorted by
    length and split into batches. Which tickets share a pool, and so a batch, follows the
    sampler's order; within a pool batches come shortest first.
    """

    def __init__(self, sampler: Sampler[int], lengths: Sequence[int], batch_size: int,
                 pool_batches: int = 4, drop_last: bool = False) -> None:
        if batch_size < 1 or pool_batches < 1:
            raise ValueError("batch_size and pool_batches must be positive")
        self.sampler = sampler
        self.lengths = list(lengths)
        self.batch_size = batch_size
        self.pool_batches = pool_batches
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        order = list(self.sampler)
        pool = self.batch_size * self.pool_batches
        for start in range(0, len(order), pool):
            chunk = sorted(order[start:start + pool], key=self.lengths.__getitem__)
            for b in range(0, len(chunk), self.batch_size):
                batch = chunk[b:b + self.batch_size]
                if len(batch) < self.batch_size and self.drop_last:
                    continue
                yield batch

    def __len__(self) -> int:
        n = len(self.sampler)  # type: ignore[arg-type]
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
