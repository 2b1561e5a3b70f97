"""Process-group helpers (gloo on CPU; one process per rank)."""

from __future__ import annotations

import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist

from config import TrainConfig


def init_distributed(cfg: TrainConfig, rank: int, world_size: int) -> bool:
    """Join the job's process group (unless the launcher already did). Returns whether we opened it."""
    if dist.is_initialized():
        return False
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    dist.init_process_group(backend=cfg.backend, init_method=f"tcp://{cfg.master_addr}:{cfg.master_port}",
                            rank=rank, world_size=world_size, timeout=timedelta(seconds=cfg.pg_timeout_s))
    return True


def cleanup_distributed(opened: bool) -> None:
    if opened and dist.is_initialized():
        dist.destroy_process_group()
        time.sleep(0.3)  # let gloo's threads release their work objects


def mean_over_ranks(values: torch.Tensor) -> torch.Tensor:
    """Element-wise mean over the ranks (a copy)."""
    out = values.detach().clone()
    dist.all_reduce(out)
    return out / dist.get_world_size()


def sum_over_ranks(values: torch.Tensor) -> torch.Tensor:
    out = values.detach().clone()
    dist.all_reduce(out)
    return out


def barrier() -> None:
    if dist.is_initialized():
        dist.barrier()
