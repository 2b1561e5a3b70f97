"""Building blocks of the forecasting models."""

from __future__ import annotations

import torch
from torch import nn


class ResidualMLPBlock(nn.Module):
    """LayerNorm -> Linear -> GELU -> Linear, added to its input."""

    def __init__(self, dim: int, expansion: int = 2) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, dim * expansion)
        self.fc2 = nn.Linear(dim * expansion, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc2(nn.functional.gelu(self.fc1(self.norm(x))))


def mlp_stack(dim: int, depth: int) -> nn.Sequential:
    layers: list[nn.Module] = []
    for _ in range(depth):
        layers += [nn.Linear(dim, dim), nn.GELU()]
    return nn.Sequential(*layers)
