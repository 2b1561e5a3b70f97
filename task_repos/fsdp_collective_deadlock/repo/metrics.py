"""Running metrics that can be aggregated over all data-parallel ranks."""

from __future__ import annotations

import torch
import torch.distributed as dist


class AverageMeter:
    """Sample-weighted running mean of a scalar (loss, accuracy, ...)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.total = 0.0
        self.count = 0

    def update(self, value: float, n: int = 1) -> None:
        self.total += float(value) * n
        self.count += n

    @property
    def local_mean(self) -> float:
        """Mean over the samples seen by this rank only."""
        return self.total / max(self.count, 1)

    def global_mean(self) -> tuple[float, int]:
        """Mean over the samples seen by all ranks, and that sample count.

        ``(total, count)`` are summed over the default process group with an all-reduce.
        """
        stats = torch.tensor([self.total, float(self.count)], dtype=torch.float64)
        if dist.is_available() and dist.is_initialized():
            dist.all_reduce(stats, op=dist.ReduceOp.SUM)
        total, count = stats.tolist()
        return total / max(count, 1.0), int(count)
