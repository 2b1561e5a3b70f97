"""Poisson deviance, the objective of the demand models.

The unit deviance of an observation y under a predicted mean mu is

    d(y, mu) = 2 * (y * log(y / mu) - (y - mu)),

zero at mu == y and convex in log(mu). The ``y * log(y / mu)`` term has the limit 0 at y == 0,
so rows with no units contribute ``2 * mu``.
"""

from __future__ import annotations

import torch

from countcast.losses.base import LOSSES, Loss


def poisson_deviance(eta: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Per-row unit deviance with mu = exp(eta)."""
    mu = torch.exp(eta)
    ylogy = torch.where(y > 0, y * torch.log(y / mu), torch.zeros_like(mu))
    return 2.0 * (ylogy - (y - mu))


@LOSSES.register("poisson", "poisson_deviance")
class PoissonDeviance(Loss):
    name = "poisson"

    def per_row(self, eta: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return poisson_deviance(eta, y)
