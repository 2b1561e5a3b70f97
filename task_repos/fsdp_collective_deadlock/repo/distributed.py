"""Process-group setup and small helpers for single-host multi-process training."""

from __future__ import annotations

import os
import socket
import time
from datetime import timedelta

import torch.distributed as dist

from config import TrainConfig


def find_free_port(host: str = "127.0.0.1") -> int:
    """Ask the OS for a free TCP port on ``host`` for the rendezvous."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def setup_distributed(rank: int, cfg: TrainConfig) -> None:
    """Join the process group for this rank (TCP rendezvous on ``cfg.master_addr``)."""
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    dist.init_process_group(
        backend=cfg.backend,
        init_method=f"tcp://{cfg.master_addr}:{cfg.master_port}",
        rank=rank,
        world_size=cfg.world_size,
        timeout=timedelta(seconds=cfg.pg_timeout_s),
    )


def cleanup_distributed() -> None:
    """Leave the process group; give gloo's worker threads a moment to wind down."""
    if dist.is_initialized():
        dist.destroy_process_group()
        time.sleep(0.5)


def is_main_process() -> bool:
    """True on rank 0 (or when running without a process group)."""
    return not dist.is_initialized() or dist.get_rank() == 0
