"""Base class of count models."""

from __future__ import annotations

import torch
from torch import nn


class CountModel(nn.Module):
    """Predicts the log of the expected units of a row. ``offset`` is the row's log-exposure."""

    def linear_predictor(self, cat: torch.Tensor, num: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def forward(self, cat: torch.Tensor, num: torch.Tensor, offset: torch.Tensor) -> torch.Tensor:
        return self.linear_predictor(cat, num) + offset

    @torch.no_grad()
    def predict_rate(self, cat: torch.Tensor, num: torch.Tensor, offset: torch.Tensor | None = None) -> torch.Tensor:
        if offset is None:
            offset = torch.zeros(cat.shape[0])
        return torch.exp(self.forward(cat, num, offset))

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())
