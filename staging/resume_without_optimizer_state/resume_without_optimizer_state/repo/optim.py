"""AdamW and its LR schedule, bundled for the trainer."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from config import TrainConfig
from schedules import SCHEDULES


def param_groups(model: nn.Module, weight_decay: float) -> list[dict[str, Any]]:
    """Weight decay on matrices only; biases and norm parameters are not decayed."""
    decay = [p for p in model.parameters() if p.requires_grad and p.ndim > 1]
    no_decay = [p for p in model.parameters() if p.requires_grad and p.ndim <= 1]
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


class OptimizerBundle:
    """The optimizer and its LR schedule, stepped together once per training step."""

    def __init__(self, cfg: TrainConfig, model: nn.Module) -> None:
        self.optimizer = torch.optim.AdamW(param_groups(model, cfg.weight_decay), lr=cfg.lr)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, SCHEDULES.build(cfg.schedule, cfg))
        self.params = [p for g in self.optimizer.param_groups for p in g["params"]]
        self.grad_clip = cfg.grad_clip

    def zero_grad(self) -> None:
        self.optimizer.zero_grad(set_to_none=True)

    def step(self) -> float:
        """Clip, step the optimizer and the schedule; returns the gradient norm before clipping."""
        norm = torch.nn.utils.clip_grad_norm_(self.params, self.grad_clip or float("inf"))
        self.optimizer.step()
        self.scheduler.step()
        return norm.item()

    @property
    def lr(self) -> float:
        return self.optimizer.param_groups[0]["lr"]

    def state_dict(self) -> dict[str, Any]:
        return {"optimizer": self.optimizer.state_dict(), "scheduler": self.scheduler.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
