"""Distributed training of the cell-wear regressor (DDP on gloo, one process per rank).

Usage::

    python train.py                         # 2 ranks on CPU, defaults from config.py
    python train.py --world-size 4 --epochs 5

Each rank reads its own telemetry files (see data.files_for_rank); DistributedDataParallel
averages the gradients, so every replica ends with the same weights.
"""

from __future__ import annotations

import argparse
import logging
import socket
from dataclasses import fields, replace

import torch
import torch.multiprocessing as mp

from callbacks import Checkpoint, History, LogProgress
from config import TrainConfig
from data import TelemetryDataModule
from distributed import init_distributed, shutdown_distributed
from model import build_model
from trainer import FitResult, Trainer
from utils import seed_everything, setup_logging

log = logging.getLogger("cellwear")


def train(cfg: TrainConfig, rank: int, world_size: int) -> FitResult:
    """Train one rank: open the process group, fit, close it. Returns the history and the model."""
    init_distributed(cfg, rank, world_size)
    try:
        seed_everything(cfg.seed, rank)
        torch.set_num_threads(1)
        data = TelemetryDataModule(cfg, rank, world_size)
        model = build_model(cfg)
        history = History()
        callbacks = [LogProgress(cfg.log_every), history, Checkpoint(cfg.out_dir, cfg.save_checkpoints)]
        result = Trainer(cfg, model, data, callbacks).fit()
        result.history = history.records
        return result
    finally:
        shutdown_distributed()


def _worker(rank: int, cfg: TrainConfig) -> None:
    setup_logging(rank)
    train(cfg, rank, cfg.world_size)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def parse_args() -> TrainConfig:
    cfg = TrainConfig()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for f in fields(cfg):
        flag = "--" + f.name.replace("_", "-")
        if f.type in ("bool", bool):
            parser.add_argument(flag, type=lambda s: s.lower() in ("1", "true", "yes"), default=f.default)
        else:
            parser.add_argument(flag, type=type(f.default), default=f.default)
    args = parser.parse_args()
    return replace(cfg, **{f.name: getattr(args, f.name) for f in fields(cfg)})


def main() -> None:
    cfg = parse_args()
    cfg = replace(cfg, master_port=_free_port())
    setup_logging(0)
    log.info("config: %s", cfg.describe())
    mp.spawn(_worker, args=(cfg,), nprocs=cfg.world_size, join=True)
    log.info("training finished on %d ranks", cfg.world_size)


if __name__ == "__main__":
    main()
