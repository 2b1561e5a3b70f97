"""Train the next-event model.

    python train.py

trains the nightly configuration (config.py) with gradient accumulation and, with
``parity_check`` on, audits it against the same job run with one full batch per step.
"""

from __future__ import annotations

import sys
import time

import torch

from callbacks import build_callbacks
from config import TrainConfig
from corpus import build_corpus
from loader import SessionLoader
from models import build_model
from optim import build_optimizer, build_scheduler
from parity import audit, full_batch_config
from trainer import Trainer
from utils import count_parameters, get_logger, seed_all

log = get_logger("train")


def fit(cfg: TrainConfig) -> dict:
    """Builds everything from the config and trains; returns the validation losses and the model."""
    torch.set_num_threads(cfg.num_threads)
    train_sessions, val_sessions = build_corpus(cfg)
    seed_all(cfg.seed)
    model = build_model(cfg)
    optimizer = build_optimizer(model, cfg)
    trainer = Trainer(cfg, model, optimizer, build_scheduler(optimizer, cfg),
                      SessionLoader(train_sessions, cfg.micro_batch_size, cfg.data_seed),
                      SessionLoader(val_sessions, 64, cfg.data_seed, shuffle=False),
                      build_callbacks(cfg.callbacks))
    val_loss = trainer.fit()
    return {"val_loss": val_loss, "steps": trainer.global_step, "model": model}


def main() -> int:
    cfg = TrainConfig()
    start = time.time()
    train_sessions, _ = build_corpus(cfg)
    tokens = sum(len(s) - 1 for s in train_sessions)
    log.info("train sessions %d (%d labelled tokens), %s with %d parameters", len(train_sessions), tokens,
             cfg.arch, count_parameters(build_model(cfg)))
    result = fit(cfg)
    log.info("trained %d optimizer steps in %.1fs, final val_loss %.5f", result["steps"], time.time() - start,
             result["val_loss"][-1])
    if cfg.parity_check and cfg.accum_steps > 1:
        baseline = fit(full_batch_config(cfg))
        if not audit(cfg, result, baseline):
            log.error("accumulation audit FAILED: the accumulated run does not match the full-batch run")
            return 1
        log.info("accumulation audit passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
