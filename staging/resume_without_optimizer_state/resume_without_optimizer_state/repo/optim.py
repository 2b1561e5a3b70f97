"""AdamW with a linear-warmup / cosine-decay learning rate, bundled for the trainer."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from config import TrainConfig


class WarmupCosine:
    """LR multiplier: linear warmup to 1 over ``warmup`` steps, then cosine decay to ``floor``."""

    def __init__(self, warmup: int, total: int, floor: float) -> None:
        self.warmup, self.total, self.floor = warmup, total, floor

    def __call__(self, step: int) -> float:
        if step < self.warmup:
            return (step + 1) / self.warmup
        progress = min(1.0, (step - self.warmup) / max(1, self.total - self.warmup))
        return self.floor + (1.0 - self.floor) * 0.5 * (1.0 + math.cos(math.pi * progress))


class OptimizerBundle:
    """The optimizer and its LR schedule, stepped together once per training step."""

    def __init__(self, cfg: TrainConfig, model: nn.Module) -> None:
        decay = [p for n, p in model.named_parameters() if p.ndim > 1]
        no_decay = [p for n, p in model.named_parameters() if p.ndim <= 1]
        self.optimizer = torch.optim.AdamW(
            [{"params": decay, "weight_decay": cfg.weight_decay},
             {"params": no_decay, "weight_decay": 0.0}],
            lr=cfg.lr,
        )
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, WarmupCosine(cfg.warmup_steps, cfg.steps, cfg.min_lr_ratio))

    def zero_grad(self) -> None:
        self.optimizer.zero_grad(set_to_none=True)

    def step(self) -> None:
        self.optimizer.step()
        self.scheduler.step()

    @property
    def lr(self) -> float:
        return self.optimizer.param_groups[0]["lr"]

    def state_dict(self) -> dict[str, Any]:
        return {"optimizer": self.optimizer.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
