"""Run configuration for the line-sensor fault classifier (defaults: the CPU smoke run)."""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass


@dataclass
class TrainConfig:
    # data
    seed: int = 7
    data_seed: int = 1234
    n_train: int = 1024
    n_val: int = 502
    n_features: int = 24
    n_classes: int = 5
    noise: float = 2.4
    # model
    model: str = "bn_mlp"
    hidden_dim: int = 64
    depth: int = 2
    dropout: float = 0.0
    # optimisation
    batch_size: int = 64
    epochs: int = 3
    lr: float = 0.05
    momentum: float = 0.9
    weight_decay: float = 1e-4
    plateau_patience: int = 0
    plateau_factor: float = 0.5
    # distributed (gloo on CPU for the smoke run, one process per rank)
    world_size: int = 2
    master_addr: str = "127.0.0.1"
    master_port: int = 29517
    timeout_s: float = 10.0
    # outputs
    out_dir: str = "runs/line-faults"
    log_every: int = 0
    callbacks: tuple[str, ...] = ("progress", "validation", "plateau", "checkpoint")


def parse_config(argv: list[str] | None = None) -> TrainConfig:
    """TrainConfig with ``--set key=value`` overrides (types taken from the defaults)."""
    p = argparse.ArgumentParser()
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = p.parse_args(argv)
    cfg = TrainConfig()
    changes = {}
    for item in args.set:
        key, _, raw = item.partition("=")
        current = getattr(cfg, key)
        if isinstance(current, bool):
            changes[key] = raw.lower() in ("1", "true", "yes")
        elif isinstance(current, tuple):
            changes[key] = tuple(x for x in raw.split(",") if x)
        else:
            changes[key] = type(current)(raw)
    return dataclasses.replace(cfg, **changes)
