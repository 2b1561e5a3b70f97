"""Building blocks of the account-table networks."""

from __future__ import annotations

import torch
from torch import nn


class Block(nn.Module):
    """Linear -> BatchNorm -> ReLU -> Dropout."""

    def __init__(self, in_dim: int, out_dim: int, dropout: float) -> None:
        super().__init__()
        self.linear = nn.Linear(in_dim, out_dim)
        self.norm = nn.BatchNorm1d(out_dim)
        self.act = nn.ReLU()
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop(self.act(self.norm(self.linear(x))))


def init_weights(module: nn.Module) -> None:
    """Kaiming-uniform weights for ReLU blocks, zero biases."""
    if isinstance(module, nn.Linear):
        nn.init.kaiming_uniform_(module.weight, nonlinearity="relu")
        nn.init.zeros_(module.bias)
