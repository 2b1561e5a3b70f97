"""Feed-forward classifiers for the account table."""

from __future__ import annotations

import torch
from torch import nn

from config import Config
from layers import Block, init_weights
from registry import get_model_builder, register_model


class ChurnMLP(nn.Module):
    """Input BatchNorm (the raw features are on very different scales), blocks, a linear head."""

    def __init__(self, n_features: int, n_classes: int, hidden_dim: int, n_blocks: int,
                 dropout: float) -> None:
        super().__init__()
        self.input_norm = nn.BatchNorm1d(n_features)
        dims = [n_features] + [hidden_dim] * n_blocks
        self.blocks = nn.Sequential(*[Block(a, b, dropout) for a, b in zip(dims[:-1], dims[1:])])
        self.head = nn.Linear(hidden_dim, n_classes)
        self.apply(init_weights)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.blocks(self.input_norm(x)))


@register_model("mlp_bn")
def _mlp_bn(cfg: Config) -> nn.Module:
    return ChurnMLP(cfg.n_features, cfg.n_classes, cfg.hidden_dim, cfg.n_blocks, cfg.dropout)


def build_model(cfg: Config) -> nn.Module:
    return get_model_builder(cfg.arch)(cfg)
