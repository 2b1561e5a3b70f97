"""Forecasting models, built by name (``cfg.arch``) from the registry."""

from __future__ import annotations

import torch
from torch import nn

from config import TrainConfig
from layers import ResidualMLPBlock, mlp_stack
from registry import Registry

MODELS = Registry("model")


class WindowMLP(nn.Module):
    """Next-value regressor over a window of past values."""

    def __init__(self, window: int, hidden_dim: int, depth: int) -> None:
        super().__init__()
        self.embed = nn.Linear(window, hidden_dim)
        self.body = mlp_stack(hidden_dim, depth)
        self.head = nn.Linear(hidden_dim, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(nn.functional.gelu(self.embed(x)))).squeeze(-1)


class ResidualForecaster(nn.Module):
    def __init__(self, window: int, hidden_dim: int, depth: int) -> None:
        super().__init__()
        self.embed = nn.Linear(window, hidden_dim)
        self.blocks = nn.Sequential(*(ResidualMLPBlock(hidden_dim) for _ in range(depth)))
        self.norm = nn.LayerNorm(hidden_dim)
        self.head = nn.Linear(hidden_dim, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.norm(self.blocks(self.embed(x)))).squeeze(-1)


@MODELS.register("mlp")
def _mlp(cfg: TrainConfig) -> nn.Module:
    return WindowMLP(cfg.window, cfg.hidden_dim, cfg.depth)


@MODELS.register("resmlp")
def _resmlp(cfg: TrainConfig) -> nn.Module:
    return ResidualForecaster(cfg.window, cfg.hidden_dim, cfg.depth)


def build_model(cfg: TrainConfig) -> nn.Module:
    return MODELS.build(cfg.arch, cfg)
