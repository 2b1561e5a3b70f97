"""The served model: the mean rate of the members."""

from __future__ import annotations

import torch
from torch import nn


class RateEnsemble(nn.Module):
    def __init__(self, members: nn.ModuleList) -> None:
        super().__init__()
        self.members = members

    def forward(self, cat: torch.Tensor, num: torch.Tensor, offset: torch.Tensor) -> torch.Tensor:
        """Log of the mean rate (not the mean of the log-rates: the planners sum units)."""
        rates = torch.stack([torch.exp(m(cat, num, offset)) for m in self.members])
        return torch.log(rates.mean(0))

    def __len__(self) -> int:
        return len(self.members)
