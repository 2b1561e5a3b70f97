"""Calibration by predicted-rate decile: observed over predicted units per bucket."""

from __future__ import annotations

import torch


def decile_table(y: torch.Tensor, mu: torch.Tensor, buckets: int = 10) -> list[dict[str, float]]:
    order = torch.argsort(mu)
    rows = []
    for chunk in torch.tensor_split(order, buckets):
        if chunk.numel() == 0:
            continue
        obs, pred = float(y[chunk].double().sum()), float(mu[chunk].double().sum())
        rows.append({"rows": int(chunk.numel()), "mean_pred": pred / chunk.numel(),
                     "observed": obs, "predicted": pred, "ratio": obs / pred if pred > 0 else float("nan")})
    return rows


def format_deciles(rows: list[dict[str, float]]) -> str:
    out = ["bucket  rows  mean_pred  obs/pred"]
    for i, r in enumerate(rows):
        out.append(f"{i:>6}  {r['rows']:>4}  {r['mean_pred']:>9.3f}  {r['ratio']:>8.3f}")
    return "\n".join(out)
