"""Scoring a model (or the ensemble's mean rate) on a dataset."""

from __future__ import annotations

import torch

from countcast.evaluation.metrics import all_metrics


@torch.no_grad()
def _rates(model, cat, num, offset) -> torch.Tensor:
    was_training = model.training
    model.eval()
    try:
        return torch.exp(model(cat, num, offset))
    finally:
        model.train(was_training)


def evaluate_model(model, dataset) -> dict[str, float]:
    """All rows at once (datasets here are small)."""
    mu = _rates(model, dataset.cat, dataset.num, dataset.offset)
    return all_metrics(dataset.y, mu)


def evaluate_batches(model, loader) -> dict[str, float]:
    """Batch by batch from a DataLoader (the monitor's path; bounded memory for big holdouts)."""
    ys, mus = [], []
    for batch in loader:
        ys.append(batch["y"])
        mus.append(_rates(model, batch["cat"], batch["num"], batch["offset"]))
    return all_metrics(torch.cat(ys), torch.cat(mus))


def evaluate_ensemble(models, dataset) -> dict[str, float]:
    mu = torch.stack([_rates(m, dataset.cat, dataset.num, dataset.offset) for m in models]).mean(0)
    return all_metrics(dataset.y, mu)
