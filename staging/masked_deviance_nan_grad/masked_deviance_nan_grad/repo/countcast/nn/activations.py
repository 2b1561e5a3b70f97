"""Activations by name."""

from __future__ import annotations

from torch import nn

from countcast.registry import Registry

ACTIVATIONS: Registry = Registry("activation")
ACTIVATIONS.add("relu", nn.ReLU)
ACTIVATIONS.add("gelu", nn.GELU)
ACTIVATIONS.add("silu", nn.SiLU, "swish")
ACTIVATIONS.add("tanh", nn.Tanh)
ACTIVATIONS.add("elu", nn.ELU)


def activation(name: str) -> nn.Module:
    return ACTIVATIONS.build(name)
