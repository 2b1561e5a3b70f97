"""Nightly training of the line-inspection defect classifier.

    python train.py                              # fresh run, checkpoints in ./checkpoints
    python train.py --resume auto                # continue the run in --ckpt-dir
    python train.py --resume path/to/last.pt --epochs 8 --data-seed 11   # fine-tune on new data
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
import time

from checkpointing import find_resume, load_checkpoint
from config import TrainConfig
from data import make_splits
from seeding import seed_everything
from trainer import Trainer

log = logging.getLogger("inspect.train")


def fit(cfg: TrainConfig) -> dict:
    """Trains (or resumes) a run; returns its history, best score, final metrics and the model."""
    seed_everything(cfg.seed)
    train, val = make_splits(cfg)
    trainer = Trainer(cfg, train, val)
    path = find_resume(cfg.ckpt_dir, cfg.resume)
    if path is not None:
        trainer.load_state_dict(load_checkpoint(path))
    start_epoch = trainer.epoch
    history = trainer.fit()
    final = trainer.evaluate()
    best = next(cb for cb in trainer.callbacks if cb.name == "best")
    return {"start_epoch": start_epoch, "epochs_run": trainer.epoch - start_epoch,
            "val_f1": history.column("val_f1"), "val_acc": history.column("val_acc"),
            "train_loss": history.column("train_loss"), "best_score": best.best, "best_epoch": best.best_epoch,
            "final": final, "model": trainer.model}


def parse_args(argv: list[str]) -> TrainConfig:
    cfg = TrainConfig()
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for f in dataclasses.fields(cfg):
        flag = "--" + f.name.replace("_", "-")
        default = getattr(cfg, f.name)
        if isinstance(default, bool):
            p.add_argument(flag, type=lambda s: s.lower() in ("1", "true", "yes"), default=default)
        else:
            p.add_argument(flag, type=type(default), default=default)
    return TrainConfig(**vars(p.parse_args(argv)))


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    cfg = parse_args(argv)
    log.info("config %s", dataclasses.asdict(cfg))
    t0 = time.monotonic()
    out = fit(cfg)
    log.info("done: %d epoch(s) from epoch %d in %.1fs; best val_f1 %.4f (epoch %d); final val_f1 %.4f",
             out["epochs_run"], out["start_epoch"], time.monotonic() - t0, out["best_score"], out["best_epoch"],
             out["final"]["val_f1"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
