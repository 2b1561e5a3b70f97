"""Squared error on log1p(units): the old objective, kept for comparisons with the 0.6 models."""

from __future__ import annotations

import torch

from countcast.losses.base import LOSSES, Loss


@LOSSES.register("mse_log", "log_mse")
class LogSquaredError(Loss):
    name = "mse_log"

    def per_row(self, eta: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return (torch.log1p(torch.exp(eta)) - torch.log1p(y)) ** 2
