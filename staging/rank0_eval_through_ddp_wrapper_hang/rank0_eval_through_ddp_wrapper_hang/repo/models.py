"""Fault classifiers over the per-window sensor features."""

from __future__ import annotations

import torch
from torch import nn

from config import TrainConfig
from registry import MODELS


class Block(nn.Module):
    def __init__(self, dim_in: int, dim_out: int, dropout: float) -> None:
        super().__init__()
        self.fc = nn.Linear(dim_in, dim_out, bias=False)
        self.norm = nn.BatchNorm1d(dim_out)
        self.act = nn.ReLU()
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop(self.act(self.norm(self.fc(x))))


@MODELS.register("bn_mlp")
class FaultNet(nn.Module):
    def __init__(self, cfg: TrainConfig) -> None:
        super().__init__()
        self.input_norm = nn.BatchNorm1d(cfg.n_features)
        dims = [cfg.n_features] + [cfg.hidden_dim] * cfg.depth
        self.blocks = nn.Sequential(*(Block(a, b, cfg.dropout) for a, b in zip(dims[:-1], dims[1:])))
        self.head = nn.Linear(dims[-1], cfg.n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.blocks(self.input_norm(x)))


@MODELS.register("bn_resmlp")
class ResidualFaultNet(FaultNet):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.input_norm(x)
        for i, block in enumerate(self.blocks):
            h = block(h) + h if i > 0 else block(h)
        return self.head(h)


def build_model(cfg: TrainConfig) -> nn.Module:
    return MODELS.get(cfg.model)(cfg)
