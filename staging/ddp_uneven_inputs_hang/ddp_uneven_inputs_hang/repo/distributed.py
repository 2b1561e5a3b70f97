"""Process-group plumbing shared by the trainer, the loss and the metrics."""

from __future__ import annotations

import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist

from config import TrainConfig


def init_distributed(cfg: TrainConfig, rank: int, world_size: int) -> None:
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    dist.init_process_group(
        backend=cfg.backend,
        init_method=f"tcp://{cfg.master_addr}:{cfg.master_port}",
        rank=rank,
        world_size=world_size,
        timeout=timedelta(seconds=cfg.dist_timeout_s),
    )


def shutdown_distributed() -> None:
    if dist.is_initialized():
        dist.destroy_process_group()
        time.sleep(0.5)  # gloo's background threads release their buffers


def world() -> tuple[int, int]:
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def all_reduce_sum(t: torch.Tensor) -> torch.Tensor:
    """Sum of ``t`` over ranks (in place when distributed; ``t`` itself otherwise)."""
    if dist.is_available() and dist.is_initialized():
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
    return t


def barrier() -> None:
    if dist.is_available() and dist.is_initialized():
        dist.barrier()
