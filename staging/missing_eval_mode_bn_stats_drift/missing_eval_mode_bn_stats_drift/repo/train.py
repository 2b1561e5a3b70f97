"""Train the churn-risk classifier on the synthetic account table.

Usage:
    python train.py                      # default Config
    python train.py --epochs 20 --val-every 5
"""

from __future__ import annotations

import argparse
import dataclasses
import logging

import torch

from callbacks import CheckpointCallback, FreezeNormStats, ProgressLogger, ValidationCallback
from checkpoint import load_checkpoint, state_digest
from config import Config
from data import build_loaders, make_splits
from evaluation import score_checkpoint
from model import build_model
from report import write_summary
from schedule import warmup_cosine
from trainer import Trainer
from utils import configure_threads, seed_everything, setup_logging

logger = logging.getLogger("churn")


def fit(cfg: Config) -> dict:
    """Train, keep the best checkpoint by validation accuracy, and score it on val and test."""
    configure_threads(cfg.num_threads)
    seed_everything(cfg.seed)
    splits = make_splits(cfg)
    loaders = build_loaders(cfg, splits)
    model = build_model(cfg)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    steps = len(loaders["train"])
    scheduler = warmup_cosine(optimizer, cfg.epochs * steps, cfg.warmup_epochs * steps, cfg.min_lr_ratio)
    checkpoints = CheckpointCallback(cfg.out_dir)
    callbacks = [FreezeNormStats(cfg.freeze_norm_after), ValidationCallback(loaders["val"], cfg.val_every),
                 checkpoints, ProgressLogger()]
    trainer = Trainer(model, optimizer, loaders["train"], callbacks, cfg.epochs, scheduler,
                      cfg.grad_clip, cfg.log_every)
    history = trainer.fit()

    best = load_checkpoint(checkpoints.best_path)
    scores = score_checkpoint(build_model(cfg), best["model"],
                              {"val": loaders["val"], "test": loaders["test"]})
    saved_acc = best["metrics"].get("val_acc")
    if saved_acc is not None and abs(scores["val"]["acc"] - saved_acc) > 1e-6:
        logger.warning("best checkpoint (epoch %d) scores val_acc %.4f on reload, %.4f when it was saved",
                       best["epoch"], scores["val"]["acc"], saved_acc)
    return {"history": history, "best_epoch": best["epoch"], "scores": scores, "model": model}


def parse_args() -> Config:
    defaults = Config()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=defaults.epochs)
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--val-every", type=int, default=defaults.val_every)
    parser.add_argument("--out-dir", default=defaults.out_dir)
    args = parser.parse_args()
    return dataclasses.replace(defaults, epochs=args.epochs, seed=args.seed,
                               val_every=args.val_every, out_dir=args.out_dir)


def main() -> None:
    setup_logging()
    cfg = parse_args()
    result = fit(cfg)
    scores = result["scores"]
    digest = state_digest(result["model"].state_dict())
    write_summary(cfg, result, digest)
    print(f"best checkpoint: epoch {result['best_epoch']}  val_acc {scores['val']['acc']:.4f}  "
          f"test_acc {scores['test']['acc']:.4f}  test_loss {scores['test']['loss']:.4f}")
    print(f"final model: sha256 {digest}")


if __name__ == "__main__":
    main()
