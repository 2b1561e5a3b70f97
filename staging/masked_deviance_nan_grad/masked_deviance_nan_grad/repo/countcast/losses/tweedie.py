"""Tweedie deviance (compound Poisson-gamma, 1 < power < 2): for intermittent, bulky demand."""

from __future__ import annotations

import torch

from countcast.losses.base import LOSSES, Loss


def tweedie_deviance(eta: torch.Tensor, y: torch.Tensor, power: float) -> torch.Tensor:
    p = power
    mu_1p = torch.exp((1.0 - p) * eta)
    mu_2p = torch.exp((2.0 - p) * eta)
    return 2.0 * (y.clamp_min(0) ** (2.0 - p) / ((1.0 - p) * (2.0 - p)) - y * mu_1p / (1.0 - p) + mu_2p / (2.0 - p))


@LOSSES.register("tweedie")
class TweedieDeviance(Loss):
    name = "tweedie"

    def __init__(self, reduction: str = "mean", power: float = 1.5) -> None:
        super().__init__(reduction)
        if not 1.0 < power < 2.0:
            raise ValueError("tweedie power must be in (1, 2)")
        self.power = power

    def per_row(self, eta: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return tweedie_deviance(eta, y, self.power)
