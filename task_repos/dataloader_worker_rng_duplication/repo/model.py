"""Reconstruction models: given a window with some positions hidden, predict the whole window."""

from __future__ import annotations

import torch
from torch import nn

from config import TrainConfig
from registry import MODELS


class ConvImputer(nn.Module):
    """Two dilated 1-d convolutions over (values, mask) channels, then a pointwise head."""

    def __init__(self, hidden: int, kernel_size: int) -> None:
        super().__init__()
        pad = kernel_size // 2
        self.body = nn.Sequential(
            nn.Conv1d(2, hidden, kernel_size, padding=pad),
            nn.GELU(),
            nn.Conv1d(hidden, hidden, kernel_size, padding=2 * pad, dilation=2),
            nn.GELU(),
        )
        self.head = nn.Conv1d(hidden, 1, 1)

    def forward(self, values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = torch.stack([values, mask.to(values.dtype)], dim=1)
        return self.head(self.body(x)).squeeze(1)


@MODELS.register("conv_imputer")
def conv_imputer(cfg: TrainConfig) -> nn.Module:
    return ConvImputer(cfg.hidden, cfg.kernel_size)


def build_model(cfg: TrainConfig) -> nn.Module:
    return MODELS.build(cfg.model, cfg)
