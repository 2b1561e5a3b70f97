"""Streaming dataset over the export's shards: nothing is held in memory but the current row."""

from __future__ import annotations

import random
from collections.abc import Iterator

from torch.utils.data import IterableDataset

from records import Record, read_shard


class ShardStream(IterableDataset):
    """Yields every record of the export, shard by shard.

    The shard order is reshuffled on every pass so that readers do not all start on the same
    file (the minibatch trainers that share this module rely on it too).
    """

    def __init__(self, paths: list[str], shuffle_shards: bool = True) -> None:
        super().__init__()
        self.paths = list(paths)
        self.shuffle_shards = shuffle_shards

    def shard_order(self) -> list[str]:
        order = list(self.paths)
        if self.shuffle_shards:
            random.shuffle(order)
        return order

    def __iter__(self) -> Iterator[Record]:
        for path in self.shard_order():
            yield from read_shard(path)
