"""The model zoo: models are registered by name and built from the run configuration."""

from __future__ import annotations

import torch
from torch import nn

from config import TrainConfig
from layers import GatedResidualBlock
from norms import RMSNorm
from registry import MODELS


@MODELS.register("gated_mlp")
class GatedMLPClassifier(nn.Module):
    """Stem, ``depth`` gated residual blocks, final norm and a linear classification head."""

    def __init__(self, cfg: TrainConfig) -> None:
        super().__init__()
        self.stem = nn.Linear(cfg.num_features, cfg.width)
        self.blocks = nn.ModuleList(
            GatedResidualBlock(cfg.width, cfg.hidden, cfg.activation, cfg.dropout, cfg.gate_floor)
            for _ in range(cfg.depth)
        )
        self.norm = RMSNorm(cfg.width)
        self.head = nn.Linear(cfg.width, cfg.num_classes)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        x = self.stem(features)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def build_model(cfg: TrainConfig) -> nn.Module:
    return MODELS.build(cfg.model_name, cfg)
