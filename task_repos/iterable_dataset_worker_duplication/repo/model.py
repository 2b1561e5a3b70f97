"""Scorers: map a record's features to the logit of the positive class."""

from __future__ import annotations

import torch
from torch import nn

from registry import build, register_model


class MLPScorer(nn.Module):
    def __init__(self, num_features: int, hidden_dim: int) -> None:
        super().__init__()
        self.hidden = nn.Linear(num_features, hidden_dim)
        self.act = nn.Tanh()
        self.out = nn.Linear(hidden_dim, 1)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.out(self.act(self.hidden(features))).squeeze(-1)


class LinearScorer(nn.Module):
    def __init__(self, num_features: int, hidden_dim: int = 0) -> None:
        super().__init__()
        self.out = nn.Linear(num_features, 1)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.out(features).squeeze(-1)


@register_model("mlp_scorer")
def _mlp(num_features: int, hidden_dim: int) -> nn.Module:
    return MLPScorer(num_features, hidden_dim)


@register_model("linear_scorer")
def _linear(num_features: int, hidden_dim: int) -> nn.Module:
    return LinearScorer(num_features)


def build_model(name: str, num_features: int, hidden_dim: int) -> nn.Module:
    return build(name, num_features=num_features, hidden_dim=hidden_dim)
