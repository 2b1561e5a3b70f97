"""Helpers to freeze parts of a model during training."""

from __future__ import annotations

from torch import nn


def batchnorm_layers(model: nn.Module) -> list[nn.Module]:
    return [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]


def freeze_batchnorm(model: nn.Module) -> int:
    """Stop updating the running statistics of every BatchNorm layer: in eval mode a BatchNorm
    normalises with its running mean / variance and leaves them as they are. The affine
    weights keep training. Returns the number of layers frozen."""
    layers = batchnorm_layers(model)
    for layer in layers:
        layer.eval()
    return len(layers)
