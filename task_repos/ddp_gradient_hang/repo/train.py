"""Distributed training of the multi-task model (DDP on gloo, one process per rank).

Usage::

    python train.py                      # 2 ranks on CPU, defaults from config.py
    python train.py --steps 100 --world-size 4

Each rank trains on its own shard of the data; DistributedDataParallel averages the
gradients so that all replicas stay identical.
"""

from __future__ import annotations

import argparse
import logging
import os
import socket
import time
from dataclasses import dataclass, field, replace
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

from config import Config
from data_loader import build_loader, infinite_batches
from model import build_model

log = logging.getLogger("train")


@dataclass
class TrainResult:
    """What one rank returns after training."""

    rank: int
    losses: list[float] = field(default_factory=list)  # total training loss per step
    model: nn.Module | None = None  # the trained model (unwrapped)


def find_free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def setup_distributed(rank: int, world_size: int, cfg: Config) -> None:
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    dist.init_process_group(
        backend=cfg.backend,
        init_method=f"tcp://{cfg.master_addr}:{cfg.master_port}",
        rank=rank,
        world_size=world_size,
        timeout=timedelta(seconds=cfg.timeout_s),
    )


def cleanup_distributed() -> None:
    if dist.is_initialized():
        dist.destroy_process_group()
        # give gloo's background threads time to release their work objects
        time.sleep(0.5)


def reconstruction_step(step: int, cfg: Config) -> bool:
    """Whether the auxiliary reconstruction loss is computed at ``step``."""
    return step % cfg.aux_every == 0


def train(cfg: Config, rank: int, world_size: int) -> TrainResult:
    """Train one rank: set up the process group, run ``cfg.steps`` steps, tear down."""
    setup_distributed(rank, world_size, cfg)
    try:
        model = build_model(cfg)
        ddp_model = DDP(model)
        optimizer = torch.optim.SGD(ddp_model.parameters(), lr=cfg.lr)
        loader, sampler = build_loader(cfg, rank, world_size)
        batches = infinite_batches(loader, sampler)

        result = TrainResult(rank=rank)
        start = time.perf_counter()
        for step in range(cfg.steps):
            x, y = next(batches)
            with_recon = reconstruction_step(step, cfg)

            logits, recon = ddp_model(x, with_recon=with_recon)
            cls_loss = F.cross_entropy(logits, y)
            loss = cls_loss
            if with_recon:
                recon_loss = F.mse_loss(recon, x)
                loss = loss + cfg.aux_weight * recon_loss

            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()

            result.losses.append(loss.item())
            if rank == 0 and step % cfg.log_every == 0:
                extra = f" recon={recon_loss.item():.4f}" if with_recon else ""
                log.info("step %3d/%d loss=%.4f cls=%.4f%s", step, cfg.steps, loss.item(), cls_loss.item(), extra)

        final = torch.tensor([result.losses[-1]])
        dist.all_reduce(final)
        final /= world_size
        if rank == 0:
            log.info("finished %d steps in %.1fs, final loss (mean over %d ranks) %.5f",
                     cfg.steps, time.perf_counter() - start, world_size, final.item())
        result.model = model
        return result
    finally:
        cleanup_distributed()


def _worker(rank: int, world_size: int, cfg: Config) -> None:
    logging.basicConfig(level=logging.INFO, format=f"[rank{rank}] %(asctime)s %(levelname)s %(message)s")
    train(cfg, rank, world_size)


def parse_args() -> Config:
    cfg = Config()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=cfg.steps)
    parser.add_argument("--world-size", type=int, default=cfg.world_size)
    parser.add_argument("--seed", type=int, default=cfg.seed)
    parser.add_argument("--port", type=int, default=cfg.master_port)
    args = parser.parse_args()
    return replace(cfg, steps=args.steps, world_size=args.world_size, seed=args.seed, master_port=args.port)


def main() -> None:
    cfg = parse_args()
    if cfg.master_port is None:
        cfg.master_port = find_free_port()
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    # one intra-op thread per rank: the ranks already share the machine's cores
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    mp.spawn(_worker, args=(cfg.world_size, cfg), nprocs=cfg.world_size, join=True)


if __name__ == "__main__":
    main()
