"""Building blocks."""

from __future__ import annotations

import torch
from torch import nn

from countcast.nn.activations import activation
from countcast.nn.init import init_dense


class Dense(nn.Module):
    def __init__(self, d_in: int, d_out: int, act: str, dropout: float = 0.0) -> None:
        super().__init__()
        self.linear = nn.Linear(d_in, d_out)
        self.act = activation(act)
        self.drop = nn.Dropout(dropout) if dropout > 0 else nn.Identity()
        init_dense(self.linear)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop(self.act(self.linear(x)))


class ResidualDense(nn.Module):
    def __init__(self, dim: int, act: str, dropout: float = 0.0) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.inner = Dense(dim, dim, act, dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.inner(self.norm(x))
