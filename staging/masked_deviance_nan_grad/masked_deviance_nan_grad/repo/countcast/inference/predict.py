"""Predicting units with an export."""

from __future__ import annotations

import torch
from torch import nn

from countcast.config import JobConfig, compose
from countcast.data.dataset import CountDataset
from countcast.data.features import Standardizer
from countcast.data.schema import NUMERIC
from countcast.data.schema import CATEGORICAL
from countcast.data.table import Table
from countcast.evaluation.metrics import poisson_quantile
from countcast.inference.export import read_export
from countcast.models import build_model
from countcast.models.ensemble import RateEnsemble


def load_ensemble(path) -> tuple[RateEnsemble, Standardizer]:
    payload = read_export(path)
    fields = {k: v for k, v in payload["job"].items() if k in JobConfig.__dataclass_fields__}
    cfg = compose(JobConfig(**fields))
    members = nn.ModuleList()
    for state, mean_rate in zip(payload["members"], payload["mean_rates"]):
        model = build_model(cfg.model, payload["cardinalities"], len(NUMERIC), mean_rate)
        model.load_state_dict(state)
        model.eval()
        members.append(model)
    scaler = Standardizer(mean=payload["scaler"]["mean"], std=payload["scaler"]["std"])
    return RateEnsemble(members), scaler


@torch.no_grad()
def predict_units(ensemble: RateEnsemble, scaler: Standardizer, table: Table) -> torch.Tensor:
    ds = CountDataset(scaler.transform(table))
    return torch.exp(ensemble(ds.cat, ds.num, ds.offset))


@torch.no_grad()
def predict_intervals(ensemble: RateEnsemble, scaler: Standardizer, table: Table,
                      levels=(0.1, 0.5, 0.9)) -> dict[str, torch.Tensor]:
    """Expected units and Poisson quantiles of the ensemble's mean rate (the order-up-to levels)."""
    mu = predict_units(ensemble, scaler, table)
    out = {"expected": mu}
    for q in levels:
        out[f"q{int(round(100 * q)):02d}"] = poisson_quantile(mu, q)
    return out


def prediction_table(table: Table, predictions: dict[str, torch.Tensor]) -> Table:
    keys = {c: table[c] for c in (*CATEGORICAL, "day") if c in table.names()}
    return Table({**keys, **{k: v.float() for k, v in predictions.items()}})

