"""Offline evaluation of a published checkpoint, and the release gate.

    python evaluate.py runs/line-faults/last.pt

The gate re-evaluates ``last.pt`` in a single process, on the whole validation split, and
requires the metrics stored with the checkpoint (the ones the job logged) to reproduce.
"""

from __future__ import annotations

import sys
from pathlib import Path

from checkpoint import load_checkpoint
from config import TrainConfig
from data import WindowData
from evaluation import evaluate
from models import build_model
from utils import get_logger

TOLERANCE = 1e-6


def evaluate_checkpoint(path: Path) -> tuple[dict[str, float], dict[str, float]]:
    state, cfg, logged = load_checkpoint(path)
    model = build_model(cfg)
    model.load_state_dict(state)
    return evaluate(model, WindowData(cfg).val_loader()), logged


def release_gate(cfg: TrainConfig) -> int:
    log = get_logger("release")
    path = Path(cfg.out_dir) / "last.pt"
    measured, logged = evaluate_checkpoint(path)
    bad = {k: (logged.get(k), v) for k, v in measured.items()
           if logged.get(k) is None or abs(logged[k] - v) > TOLERANCE}
    if bad:
        for k, (was, now) in bad.items():
            log.error("release gate: %s logged %.6f, %s evaluates to %.6f", k, was, path, now)
        return 1
    log.info("release gate passed: %s reproduces val_loss %.6f val_acc %.4f", path, measured["val_loss"],
             measured["val_acc"])
    return 0


def main(argv: list[str]) -> int:
    measured, logged = evaluate_checkpoint(Path(argv[0]))
    print({"measured": measured, "logged": logged})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
