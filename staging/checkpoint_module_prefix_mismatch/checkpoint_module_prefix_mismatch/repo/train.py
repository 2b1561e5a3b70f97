"""Train the churn scorer, publish the best checkpoint, and run the release gate on it.

    python train.py [--set key=value ...]

The release gate loads the published checkpoint exactly as the scoring service does (serve.py) and
requires the served validation metrics to equal the ones logged when the checkpoint was written.
"""

from __future__ import annotations

import sys
import time
from dataclasses import asdict, dataclass, replace

from torch import nn

from callbacks import BestCheckpoint, build_callbacks
from config import TrainConfig, describe, parse_args
from data import make_splits
from model import build_model
from serve import agrees, score_checkpoint
from trainer import Trainer
from utils import get_logger, seed_everything

log = get_logger("train")


@dataclass
class FitResult:
    model: nn.Module
    logged: dict[str, float]
    served: dict[str, float]
    best_epoch: int
    history: list[dict[str, float]]
    config: dict


def fit(cfg: TrainConfig) -> FitResult:
    seed_everything(cfg.seed)
    train, val = make_splits(cfg)
    model = build_model(cfg)
    callbacks = build_callbacks(cfg)
    log.info("%s with %d parameters, %d train / %d val rows", cfg.arch,
             sum(p.numel() for p in model.parameters()), len(train), len(val))
    trainer = Trainer(cfg, model, callbacks)
    start = time.monotonic()
    history = trainer.fit(train, val)
    log.info("trained %d steps in %.1fs", trainer.step, time.monotonic() - start)
    best = next(cb for cb in callbacks if isinstance(cb, BestCheckpoint))
    scored = score_checkpoint(replace(cfg, checkpoint=str(best.path)))
    return FitResult(scored.model, best.best_metrics, scored.metrics, scored.epoch, history, asdict(cfg))


def main() -> int:
    cfg = parse_args()
    log.info("config: %s", describe(cfg))
    result = fit(cfg)
    log.info("release gate: best epoch %d, logged %s, served %s", result.best_epoch, result.logged, result.served)
    if not agrees(result.served, result.logged):
        log.error("release gate FAILED: the served checkpoint does not reproduce its logged metrics")
        return 1
    log.info("release gate passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
