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


# -- planning metrics (reports and backtests; not part of the monitored set above) -------------

def poisson_quantile(mu: torch.Tensor, q: float, max_units: int | None = None) -> torch.Tensor:
    """The q-quantile of Poisson(mu), per row: the smallest k with P(N <= k) >= q."""
    if not 0.0 < q < 1.0:
        raise ValueError("q must be in (0, 1)")
    mu = mu.double().clamp_min(1e-12)
    top = int(max_units if max_units is not None else float((mu + 10 * mu.sqrt() + 10).max()))
    ks = torch.arange(top + 1, dtype=torch.float64)
    log_pmf = ks[None, :] * torch.log(mu[:, None]) - mu[:, None] - torch.lgamma(ks[None, :] + 1)
    cdf = torch.cumsum(torch.exp(log_pmf), dim=1)
    reached = cdf >= q
    first = torch.argmax(reached.to(torch.int8), dim=1)
    return torch.where(reached.any(dim=1), first, torch.full_like(first, top)).to(torch.float64)


def interval_coverage(y: torch.Tensor, mu: torch.Tensor, level: float = 0.8) -> float:
    """Share of rows whose units fall in the central ``level`` Poisson interval."""
    lo = poisson_quantile(mu, (1 - level) / 2)
    hi = poisson_quantile(mu, 1 - (1 - level) / 2)
    y = y.double()
    return float(((y >= lo) & (y <= hi)).double().mean())


def pinball_loss(y: torch.Tensor, pred: torch.Tensor, q: float) -> float:
    diff = y.double() - pred.double()
    return float(torch.maximum(q * diff, (q - 1) * diff).mean())


def weighted_ape(y: torch.Tensor, mu: torch.Tensor) -> float:
    """Sum of absolute errors over the sum of units (the planners' WAPE)."""
    y, mu = y.double(), mu.double()
    return float((y - mu).abs().sum() / y.sum().clamp_min(1e-12))


def bias(y: torch.Tensor, mu: torch.Tensor) -> float:
    return float((mu.double() - y.double()).mean())


PLANNING = {
    "wape": weighted_ape,
    "bias": bias,
    "coverage80": lambda y, mu: interval_coverage(y, mu, 0.8),
    "pinball90": lambda y, mu: pinball_loss(y, poisson_quantile(mu, 0.9), 0.9),
}


def planning_metrics(y: torch.Tensor, mu: torch.Tensor) -> dict[str, float]:
    return {**all_metrics(y, mu), **{name: fn(y, mu) for name, fn in PLANNING.items()}}


def by_group(y: torch.Tensor, mu: torch.Tensor, groups: torch.Tensor, fn=mean_poisson_deviance) -> dict[int, float]:
    """A metric per group (store, item, weekday...)."""
    out = {}
    for g in torch.unique(groups).tolist():
        m = groups == g
        out[int(g)] = fn(y[m], mu[m])
    return out
