"""Weight initialisation. Log-link models start near the data's mean rate: the output bias is set to
log(mean units) and the last layer's weights are scaled down, so the first steps do not explode."""

from __future__ import annotations

import math

import torch
from torch import nn


def init_dense(layer: nn.Linear, gain: float = 1.0) -> None:
    nn.init.kaiming_uniform_(layer.weight, a=math.sqrt(5))
    layer.weight.data.mul_(gain)
    if layer.bias is not None:
        nn.init.zeros_(layer.bias)


def init_output(layer: nn.Linear, mean_rate: float, scale: float = 0.1) -> None:
    layer.weight.data.mul_(scale)
    if layer.bias is not None:
        with torch.no_grad():
            layer.bias.fill_(math.log(max(mean_rate, 1e-3)))


def init_embedding(emb: nn.Embedding, std: float = 0.05) -> None:
    nn.init.normal_(emb.weight, std=std)
