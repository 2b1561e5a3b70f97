"""Writing a night's ensemble for the planning service.

An export is a plain dict of tensors and numbers (``torch.load(..., weights_only=True)`` reads it):
the job config, the data cardinalities, the feature scaler and every member's state_dict.
"""

from __future__ import annotations

from pathlib import Path

import torch

from countcast.version import __version__


def export_ensemble(path: Path, job: dict, cardinalities: dict[str, int], scaler: dict, models,
                    mean_rates: list[float]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "format": 2,
        "version": __version__,
        "job": dict(job),
        "cardinalities": dict(cardinalities),
        "scaler": scaler,
        "mean_rates": list(mean_rates),
        "members": [{k: v.detach().clone() for k, v in m.state_dict().items()} for m in models],
    }
    tmp = path.with_suffix(path.suffix + ".tmp")
    torch.save(payload, tmp)
    tmp.replace(path)
    return path


def read_export(path: Path) -> dict:
    payload = torch.load(Path(path), map_location="cpu", weights_only=True)
    if payload.get("format") != 2:
        raise ValueError(f"{path}: unsupported export format {payload.get('format')!r}")
    return payload
