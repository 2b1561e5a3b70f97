"""Run summary written next to the checkpoints (read by the weekly A/B comparison)."""

from __future__ import annotations

import json
from pathlib import Path

from config import Config


def write_summary(cfg: Config, result: dict, digest: str) -> Path:
    path = Path(cfg.out_dir) / "summary.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    summary = {
        "config": cfg.to_dict(),
        "best_epoch": result["best_epoch"],
        "scores": result["scores"],
        "final_model_sha256": digest,
        "history": result["history"],
    }
    path.write_text(json.dumps(summary, indent=2, sort_keys=True))
    return path
