"""Cell-wear regressors: telemetry features -> predicted capacity fade (one number per row)."""

from __future__ import annotations

import torch
from torch import nn

from config import TrainConfig
from registry import MODELS


class ResidualBlock(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, dim)
        self.fc2 = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc2(torch.relu(self.fc1(self.norm(x))))


class WearRegressor(nn.Module):
    def __init__(self, n_features: int, hidden: int, blocks: list[nn.Module]) -> None:
        super().__init__()
        self.stem = nn.Linear(n_features, hidden)
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.blocks(torch.relu(self.stem(x)))).squeeze(-1)


@MODELS.register("resmlp")
def resmlp(cfg: TrainConfig) -> WearRegressor:
    return WearRegressor(cfg.n_features, cfg.hidden_dim, [ResidualBlock(cfg.hidden_dim) for _ in range(cfg.depth)])


@MODELS.register("mlp")
def mlp(cfg: TrainConfig) -> WearRegressor:
    layers: list[nn.Module] = []
    for _ in range(cfg.depth):
        layers += [nn.Linear(cfg.hidden_dim, cfg.hidden_dim), nn.Tanh()]
    return WearRegressor(cfg.n_features, cfg.hidden_dim, layers)


def build_model(cfg: TrainConfig) -> WearRegressor:
    torch.manual_seed(cfg.seed)  # every rank builds the same initial weights
    return MODELS.build(cfg.arch, cfg)
