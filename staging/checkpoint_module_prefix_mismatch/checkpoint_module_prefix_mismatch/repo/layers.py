"""Building blocks of the scorer."""

from __future__ import annotations

import torch
from torch import nn


class FeatureScaler(nn.Module):
    """Standardises raw features with statistics fitted on the training split."""

    def __init__(self, n_features: int) -> None:
        super().__init__()
        self.register_buffer("mean", torch.zeros(n_features), persistent=False)
        self.register_buffer("std", torch.ones(n_features), persistent=False)

    @torch.no_grad()
    def fit(self, x: torch.Tensor) -> None:
        self.mean.copy_(x.mean(0))
        self.std.copy_(x.std(0).clamp_min(1e-6))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.mean) / self.std


class FeatureModule(nn.Module):
    """Scaled features projected to the hidden width."""

    def __init__(self, n_features: int, hidden_dim: int) -> None:
        super().__init__()
        self.scaler = FeatureScaler(n_features)
        self.proj = nn.Linear(n_features, hidden_dim)
        self.act = nn.GELU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.proj(self.scaler(x)))


class ResidualBlock(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(dim, dim)
        self.norm = nn.BatchNorm1d(dim)
        self.fc2 = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc2(torch.relu(self.norm(self.fc1(x))))
