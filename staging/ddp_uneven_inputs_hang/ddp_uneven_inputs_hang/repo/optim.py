"""Optimiser and learning-rate schedule."""

from __future__ import annotations

import torch

from config import TrainConfig
from registry import OPTIMIZERS


@OPTIMIZERS.register("sgd")
def sgd(params, cfg: TrainConfig) -> torch.optim.Optimizer:
    return torch.optim.SGD(params, lr=cfg.lr, weight_decay=cfg.weight_decay)


def build_optimizer(model: torch.nn.Module, cfg: TrainConfig, name: str = "sgd"):
    opt = OPTIMIZERS.build(name, model.parameters(), cfg)
    sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=cfg.lr_decay)
    return opt, sched
