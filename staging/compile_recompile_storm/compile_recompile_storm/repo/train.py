"""Train the session intent classifier.

    python train.py [--set key=value ...]
"""

from __future__ import annotations

import sys
import time

from callbacks import build_callbacks
from config import TrainConfig, describe, parse_args
from datamodule import SessionDataModule
from model import build_model
from trainer import Trainer
from utils import get_logger, seed_everything

log = get_logger("train")


def fit(cfg: TrainConfig) -> dict:
    seed_everything(cfg.seed)
    data = SessionDataModule(cfg)
    data.setup()
    model = build_model(cfg)
    log.info("%s with %d parameters, %d train / %d val sessions (length %d-%d)", cfg.model,
             sum(p.numel() for p in model.parameters()), len(data.train_set), len(data.val_set),
             cfg.min_len, cfg.max_len)
    trainer = Trainer(cfg, model, build_callbacks(cfg))
    start = time.monotonic()
    history = trainer.fit(data)
    log.info("trained %d steps in %.1fs", trainer.step, time.monotonic() - start)
    return {"model": model, "history": history, "steps": trainer.step}


def main() -> int:
    cfg = parse_args()
    log.info("config: %s", describe(cfg))
    result = fit(cfg)
    last = result["history"][-1]
    log.info("done: val_loss %.6f val_acc %.4f", last["val_loss"], last["val_acc"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
