"""Building blocks of the gated MLP."""

from __future__ import annotations

import torch
from torch import nn

from activations import activation_unit
from gating import squash_gate
from norms import RMSNorm


class GatedResidualBlock(nn.Module):
    """Pre-norm residual block whose feed-forward update is scaled by a learned, input-dependent gate:

        y = x + gate(norm(x)) * ffn(norm(x))
    """

    def __init__(self, width: int, hidden: int, activation: str, dropout: float, gate_floor: float) -> None:
        super().__init__()
        self.norm = RMSNorm(width)
        self.fc_in = nn.Linear(width, hidden)
        self.act = activation_unit(activation, dropout)
        self.fc_out = nn.Linear(hidden, width)
        self.gate = nn.Linear(width, width)
        self.gate_floor = gate_floor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm(x)
        update = self.fc_out(self.act(self.fc_in(h)))
        gate = squash_gate(self.gate(h), self.gate_floor)
        return x + gate * update
