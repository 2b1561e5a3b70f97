"""Train the telemetry fault classifier.

Usage:
    python train.py                          # the defaults of config.TrainConfig
    python train.py --activation relu --epochs 6
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import time

from config import TrainConfig
from trainer import fit


def parse_args() -> argparse.Namespace:
    defaults = TrainConfig()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--epochs", type=int, default=defaults.epochs)
    ap.add_argument("--seed", type=int, default=defaults.seed)
    ap.add_argument("--activation", default=defaults.activation)
    ap.add_argument("--depth", type=int, default=defaults.depth)
    ap.add_argument("--dropout", type=float, default=defaults.dropout)
    ap.add_argument("--gate-floor", dest="gate_floor", type=float, default=defaults.gate_floor)
    ap.add_argument("--lr", type=float, default=defaults.lr)
    return ap.parse_args()


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    args = parse_args()
    cfg = dataclasses.replace(TrainConfig(), **vars(args))
    start = time.monotonic()
    result = fit(cfg)
    print(f"done in {time.monotonic() - start:.1f}s: final val_loss {result['val_loss'][-1]:.4f} "
          f"val_acc {result['val_acc'][-1]:.4f}")


if __name__ == "__main__":
    main()
