"""Classifier heads over standardised sensor features."""

from __future__ import annotations

import torch
from torch import nn

from registry import MODELS


class Block(nn.Module):
    def __init__(self, dim_in: int, dim_out: int, dropout: float, residual: bool) -> None:
        super().__init__()
        self.fc = nn.Linear(dim_in, dim_out)
        self.norm = nn.LayerNorm(dim_out)
        self.drop = nn.Dropout(dropout)
        self.residual = residual and dim_in == dim_out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.drop(torch.relu(self.norm(self.fc(x))))
        return x + h if self.residual else h


class MLPClassifier(nn.Module):
    def __init__(self, n_features: int, n_classes: int, hidden_dim: int, depth: int, dropout: float,
                 residual: bool = False) -> None:
        super().__init__()
        dims = [n_features] + [hidden_dim] * depth
        self.blocks = nn.ModuleList(Block(a, b, dropout, residual) for a, b in zip(dims[:-1], dims[1:]))
        self.head = nn.Linear(hidden_dim, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return self.head(x)


@MODELS.register("mlp")
def mlp(cfg) -> nn.Module:
    return MLPClassifier(cfg.n_features, cfg.n_classes, cfg.hidden_dim, cfg.depth, cfg.dropout)


@MODELS.register("resmlp")
def resmlp(cfg) -> nn.Module:
    return MLPClassifier(cfg.n_features, cfg.n_classes, cfg.hidden_dim, cfg.depth, cfg.dropout, residual=True)
