"""Poisson negative log-likelihood on the log-rate (the model's output)."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def poisson_loss(log_rate: torch.Tensor, units: torch.Tensor) -> torch.Tensor:
    return F.poisson_nll_loss(log_rate, units, log_input=True, full=False, reduction="mean")


def poisson_deviance(mu: torch.Tensor, units: torch.Tensor) -> torch.Tensor:
    """Mean unit deviance 2 * (y log(y / mu) - (y - mu))."""
    return (2.0 * (torch.xlogy(units, units) - torch.xlogy(units, mu) - (units - mu))).mean()
