"""Train the line-fault classifier with DistributedDataParallel, then run the release gate.

    python train.py                       # 2 ranks on gloo (the CPU smoke run)
    python train.py --set world_size=1    # single process
    python train.py --set epochs=8 --set model=bn_resmlp
"""

from __future__ import annotations

import sys
from typing import Any

import torch.multiprocessing as mp

import distributed
from config import TrainConfig, parse_config
from data import WindowData
from evaluate import release_gate
from models import build_model
from trainer import Trainer
from utils import get_logger, seed_everything


def train(cfg: TrainConfig, rank: int = 0, world_size: int = 1) -> dict[str, Any]:
    """One rank of the job: returns the history (per epoch) and the trained model."""
    opened = distributed.setup(cfg, rank, world_size)
    try:
        seed_everything(cfg.seed)
        data = WindowData(cfg)
        model = build_model(cfg)
        trainer = Trainer(cfg, model, data)
        history = trainer.fit()
        del trainer  # the DDP wrapper (and its reducer) goes before the process group
        distributed.barrier()
        return {**history, "model": model}
    finally:
        distributed.teardown(opened)


def _rank_main(rank: int, cfg: TrainConfig) -> None:
    try:
        train(cfg, rank, cfg.world_size)
    except Exception:
        get_logger("train", rank).exception("rank %d failed", rank)
        raise


def main(argv: list[str] | None = None) -> int:
    cfg = parse_config(argv)
    log = get_logger("train")
    log.info("training %s on %d rank(s), %d epochs", cfg.model, cfg.world_size, cfg.epochs)
    if cfg.world_size > 1:
        mp.spawn(_rank_main, args=(cfg,), nprocs=cfg.world_size, join=True)
    else:
        train(cfg)
    return release_gate(cfg)


if __name__ == "__main__":
    sys.exit(main())
