"""Residual MLP classifier and its FSDP2 sharding plan."""

from __future__ import annotations

import torch
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard


class ResidualBlock(nn.Module):
    """Pre-norm feed-forward block: ``x + W2 gelu(W1 norm(x))``."""

    def __init__(self, dim: int, expansion: int = 2) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, expansion * dim)
        self.fc2 = nn.Linear(expansion * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc2(nn.functional.gelu(self.fc1(self.norm(x))))


class SensorClassifier(nn.Module):
    """Input projection, a stack of residual blocks, and a linear classification head."""

    def __init__(self, num_features: int, hidden_dim: int, num_blocks: int, num_classes: int):
        super().__init__()
        self.embed = nn.Linear(num_features, hidden_dim)
        self.blocks = nn.ModuleList(ResidualBlock(hidden_dim) for _ in range(num_blocks))
        self.norm = nn.LayerNorm(hidden_dim)
        self.head = nn.Linear(hidden_dim, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.embed(x)
        for block in self.blocks:
            h = block(h)
        return self.head(self.norm(h))


def shard_model(model: SensorClassifier, world_size: int) -> SensorClassifier:
    """Apply FSDP2: one shard group per residual block, plus the root for the rest.

    Parameters become DTensors sharded over a 1-D CPU mesh of ``world_size`` ranks; each
    block's parameters are all-gathered just before its forward/backward and freed after.
    """
    mesh = init_device_mesh("cpu", (world_size,))
    for block in model.blocks:
        fully_shard(block, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model
