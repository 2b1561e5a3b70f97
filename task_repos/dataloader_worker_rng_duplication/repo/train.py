"""Masked-reconstruction pretraining of the sensor imputer: `python train.py [--epochs N ...]`."""

from __future__ import annotations

import argparse
import dataclasses

from config import TrainConfig
from trainer import fit


def parse_args() -> TrainConfig:
    cfg = TrainConfig()
    ap = argparse.ArgumentParser(description=__doc__)
    for f in dataclasses.fields(TrainConfig):
        ap.add_argument(f"--{f.name.replace('_', '-')}", dest=f.name, type=type(getattr(cfg, f.name)),
                        default=getattr(cfg, f.name))
    return TrainConfig(**vars(ap.parse_args()))


def main() -> None:
    fit(parse_args())


if __name__ == "__main__":
    main()
