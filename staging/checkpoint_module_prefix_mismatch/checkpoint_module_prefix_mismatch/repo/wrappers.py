"""The training-time wrapper: loss inside the module, so one compiled graph covers forward + loss."""

from __future__ import annotations

import torch
from torch import nn

from config import TrainConfig


class TrainWrapper(nn.Module):
    def __init__(self, module: nn.Module, label_smoothing: float) -> None:
        super().__init__()
        self.module = module
        self.criterion = nn.CrossEntropyLoss(label_smoothing=label_smoothing)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits = self.module(x)
        return self.criterion(logits, y), logits


def wrap_for_training(model: nn.Module, cfg: TrainConfig) -> nn.Module:
    net = TrainWrapper(model, cfg.label_smoothing)
    if cfg.compile:
        net = torch.compile(net, backend=cfg.compile_backend, dynamic=False)
    return net
