"""Serving side: load a published checkpoint into the plain scorer and score the validation split.

    python serve.py --checkpoint runs/churn/best.pt
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from torch import nn

from checkpointing import read_checkpoint
from config import TrainConfig, config_from_dict, parse_args
from data import make_splits
from evaluation import evaluate
from model import build_model
from utils import get_logger

log = get_logger("serve")


@dataclass
class Scored:
    model: nn.Module
    metrics: dict[str, float]
    logged: dict[str, float]
    epoch: int


def load_for_serving(path: str) -> tuple[nn.Module, dict]:
    ckpt = read_checkpoint(path)
    cfg = config_from_dict(ckpt["config"])
    model = build_model(cfg)
    model.load_state_dict(ckpt["model"])
    model.eval()
    return model, ckpt


def score_checkpoint(cfg: TrainConfig) -> Scored:
    model, ckpt = load_for_serving(cfg.checkpoint)
    _, val = make_splits(config_from_dict(ckpt["config"]))
    metrics = evaluate(model, val)
    return Scored(model, metrics, dict(ckpt["metrics"]), int(ckpt["epoch"]))


def agrees(served: dict[str, float], logged: dict[str, float], tol: float = 1e-6) -> bool:
    return all(abs(served[k] - logged[k]) <= tol for k in logged)


def main() -> int:
    cfg = parse_args()
    scored = score_checkpoint(cfg)
    log.info("%s (epoch %d): served %s, logged at save time %s", cfg.checkpoint, scored.epoch, scored.metrics,
             scored.logged)
    return 0 if agrees(scored.metrics, scored.logged) else 1


if __name__ == "__main__":
    sys.exit(main())
