"""Relative position bias (T5 style): a learned per-head bias for each bucket of key - query offsets.

Offsets below ``max_distance`` get their own bucket up to half the range, then logarithmically wider
ones; both directions are kept apart.
"""

from __future__ import annotations

import math

import torch
from torch import nn


def relative_buckets(length: int, num_buckets: int, max_distance: int) -> torch.Tensor:
    """(length, length) bucket index of every (query, key) offset."""
    pos = torch.arange(length)
    offset = pos[None, :] - pos[:, None]
    half = num_buckets // 2
    exact = half // 2
    base = (offset > 0).long() * half
    dist = offset.abs()
    log_ratio = torch.log(dist.float().clamp(min=1) / exact) / math.log(max_distance / exact)
    far = (exact + (log_ratio * (half - exact)).long()).clamp(max=half - 1)
    return base + torch.where(dist < exact, dist, far)


class RelativePositionBias(nn.Module):
    def __init__(self, n_heads: int, num_buckets: int, max_distance: int) -> None:
        super().__init__()
        self.num_buckets = num_buckets
        self.max_distance = max_distance
        self.embed = nn.Embedding(num_buckets, n_heads)
        self._buckets: dict[int, torch.Tensor] = {}

    def buckets(self, length: int) -> torch.Tensor:
        # the bucket table only depends on the length: build it once per length
        table = self._buckets.get(length)
        if table is None:
            table = relative_buckets(length, self.num_buckets, self.max_distance)
            self._buckets[length] = table
        return table

    def forward(self, length: int) -> torch.Tensor:
        """(n_heads, length, length) additive attention bias."""
        return self.embed(self.buckets(length)).permute(2, 0, 1)
