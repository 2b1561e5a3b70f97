"""Holdout metrics, computed in float64 without gradients."""

from __future__ import annotations

import torch


def mean_poisson_deviance(y: torch.Tensor, mu: torch.Tensor) -> float:
    y, mu = y.double(), mu.double()
    dev = 2.0 * (torch.xlogy(y, y / mu) - (y - mu))
    return float(dev.mean())


def mean_absolute_error(y: torch.Tensor, mu: torch.Tensor) -> float:
    return float((y.double() - mu.double()).abs().mean())


def calibration_ratio(y: torch.Tensor, mu: torch.Tensor) -> float:
    """Predicted units over observed units (1.0: calibrated in aggregate)."""
    return float(mu.double().sum() / y.double().sum().clamp_min(1e-12))


METRICS = {"deviance": mean_poisson_deviance, "mae": mean_absolute_error, "calibration": calibration_ratio}


def all_metrics(y: torch.Tensor, mu: torch.Tensor) -> dict[str, float]:
    return {name: fn(y, mu) for name, fn in METRICS.items()}
