"""Residual MLP classifier for telemetry windows."""

from __future__ import annotations

import torch
from torch import nn

from config import Config


class ResidualBlock(nn.Module):
    """MLP block with a bounded residual update: ``x + limit(fc2(gelu(fc1(x))))``.

    There is no per-block normalisation (it cost too much latency in serving); the update
    limit keeps the residual stream in range instead.
    """

    def __init__(self, width: int, expansion: int, max_update: float) -> None:
        super().__init__()
        self.fc1 = nn.Linear(width, width * expansion)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(width * expansion, width)
        self.max_update = max_update

    def limit_update(self, h: torch.Tensor) -> torch.Tensor:
        """Rescale the update if its peak magnitude exceeds ``max_update``.

        Early in training a block can emit a few huge activations on raw-unit inputs; they
        blow up the residual stream and the int8 calibration downstream. The whole batch is
        rescaled by one factor so the update direction is unchanged.
        """
        peak = h.abs().amax()
        if peak > self.max_update:
            h = h * (self.max_update / peak)
        return h

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc2(self.act(self.fc1(x)))
        return x + self.limit_update(h)


class TelemetryNet(nn.Module):
    """Input projection, a stack of residual blocks and a linear classification head."""

    def __init__(self, cfg: Config) -> None:
        super().__init__()
        self.stem = nn.Linear(cfg.num_features, cfg.width)
        self.blocks = nn.ModuleList(
            ResidualBlock(cfg.width, cfg.expansion, cfg.max_update) for _ in range(cfg.depth)
        )
        self.head_norm = nn.LayerNorm(cfg.width)
        self.head = nn.Linear(cfg.width, cfg.num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        for block in self.blocks:
            x = block(x)
        return self.head(self.head_norm(x))


def build_model(cfg: Config) -> TelemetryNet:
    """Create the model (parameters drawn from the global RNG; seed it first)."""
    return TelemetryNet(cfg)
