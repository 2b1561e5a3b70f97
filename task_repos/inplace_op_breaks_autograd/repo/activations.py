"""Activation table of the model zoo: every block builds its non-linearity from here."""

from __future__ import annotations

from torch import nn

from registry import Registry

ACTIVATIONS = Registry("activation")
ACTIVATIONS.register("gelu")(nn.GELU)
ACTIVATIONS.register("silu")(nn.SiLU)
ACTIVATIONS.register("relu")(nn.ReLU)
ACTIVATIONS.register("tanh")(nn.Tanh)


def activation_unit(name: str, dropout: float) -> nn.Module:
    """The activation of a block's feed-forward branch, followed by its dropout."""
    layers = [ACTIVATIONS.build(name)]
    if dropout > 0:
        layers.append(nn.Dropout(dropout, inplace=True))
    return nn.Sequential(*layers)
