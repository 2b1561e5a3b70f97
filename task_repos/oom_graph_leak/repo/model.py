"""Feed-forward regressor for dense tabular features."""

from __future__ import annotations

import torch
from torch import nn


class TabularMLP(nn.Module):
    """Two hidden layers with GELU activations and a scalar output head."""

    def __init__(self, n_features: int, hidden_dim: int) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(n_features, hidden_dim),
            nn.GELU(),
            nn.Linear(hidden_dim, hidden_dim),
            nn.GELU(),
            nn.Linear(hidden_dim, 1),
        )

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.net(features).squeeze(-1)


def build_model(n_features: int, hidden_dim: int) -> TabularMLP:
    return TabularMLP(n_features, hidden_dim)
