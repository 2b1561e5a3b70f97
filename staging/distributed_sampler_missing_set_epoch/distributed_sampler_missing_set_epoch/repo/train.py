"""Train the ticket router: DDP on CPU (gloo), one process per rank.

Usage::

    python train.py                                   # 2 ranks, defaults from config.py
    python train.py --epochs 6 --world-size 4
    python train.py --epochs 6 --resume runs/ticket-router/last.pt   # continue a run
"""

from __future__ import annotations

import argparse
import os
import socket
import time
from dataclasses import dataclass, field, replace

import torch.multiprocessing as mp
from torch import nn

from callbacks import build_callbacks
from config import TrainConfig
from datamodule import TicketDataModule
from distributed import cleanup_distributed, init_distributed
from logutil import get_logger, setup_logging
from seeding import seed_everything
from trainer import Trainer

log = get_logger("job")


@dataclass
class FitResult:
    """What one rank returns."""

    model: nn.Module | None = None  # the trained model (unwrapped)
    history: list[dict] = field(default_factory=list)  # one record per epoch, resumed epochs included
    steps: int = 0


def fit(cfg: TrainConfig, rank: int, world_size: int) -> FitResult:
    """Train one rank: join the process group, train cfg.epochs epochs (or the rest of them), leave."""
    opened = init_distributed(cfg, rank, world_size)
    try:
        seed_everything(cfg.seed)
        data = TicketDataModule(cfg, rank, world_size)
        data.setup()
        trainer = Trainer(cfg, data, rank, world_size, build_callbacks(cfg))
        start = time.perf_counter()
        history = trainer.fit()
        if rank == 0 and history:
            last = history[-1]
            log.info("done: %d epochs, %d steps on %d ranks in %.1fs; val_loss %.6f val_acc %.4f", last["epoch"],
                     trainer.state.global_step, world_size, time.perf_counter() - start, last["val_loss"],
                     last["val_acc"])
        return FitResult(model=trainer.model, history=history, steps=trainer.state.global_step)
    finally:
        cleanup_distributed(opened)


def _worker(rank: int, world_size: int, cfg: TrainConfig) -> None:
    setup_logging(rank)
    if rank == 0:
        log.info("config: %s", cfg.describe())
    fit(cfg, rank, world_size)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def parse_args() -> TrainConfig:
    cfg = TrainConfig()
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--epochs", type=int, default=cfg.epochs)
    p.add_argument("--world-size", type=int, default=cfg.world_size)
    p.add_argument("--seed", type=int, default=cfg.seed)
    p.add_argument("--batch-size", type=int, default=cfg.batch_size)
    p.add_argument("--out-dir", default=cfg.out_dir)
    p.add_argument("--resume", default=cfg.resume_from, help="a last.pt to continue from")
    p.add_argument("--log-every", type=int, default=cfg.log_every)
    a = p.parse_args()
    return replace(cfg, epochs=a.epochs, world_size=a.world_size, seed=a.seed, batch_size=a.batch_size,
                   out_dir=a.out_dir, resume_from=a.resume, log_every=a.log_every)


def main() -> None:
    cfg = parse_args()
    if not cfg.master_port:
        cfg = replace(cfg, master_port=free_port())
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    os.environ.setdefault("OMP_NUM_THREADS", "1")  # the ranks share the machine's cores
    mp.spawn(_worker, args=(cfg.world_size, cfg), nprocs=cfg.world_size, join=True)


if __name__ == "__main__":
    main()
