"""Job configuration: a dataclass with defaults, overridable with ``--set key=value``."""

from __future__ import annotations

import argparse
from dataclasses import asdict, dataclass, fields, replace


@dataclass
class TrainConfig:
    seed: int = 7
    data_seed: int = 1234
    n_train: int = 1024
    n_val: int = 512
    n_features: int = 12
    n_classes: int = 4
    arch: str = "resmlp"
    hidden_dim: int = 48
    depth: int = 2
    epochs: int = 5
    batch_size: int = 64
    lr: float = 3e-3
    weight_decay: float = 1e-4
    label_smoothing: float = 0.05
    compile: bool = True
    compile_backend: str = "eager"
    out_dir: str = "runs/churn"
    checkpoint: str = ""
    log_every: int = 0


def _coerce(kind: type, text: str):
    if kind is bool:
        return text.lower() in ("1", "true", "yes", "on")
    return kind(text)


def config_from_dict(values: dict) -> TrainConfig:
    """The config a checkpoint was trained with (unknown keys of newer jobs are ignored)."""
    known = {f.name for f in fields(TrainConfig)}
    return replace(TrainConfig(), **{k: v for k, v in values.items() if k in known})


def parse_args(argv: list[str] | None = None) -> TrainConfig:
    parser = argparse.ArgumentParser(description="train the churn scorer")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--checkpoint", default=None)
    args = parser.parse_args(argv)
    cfg = TrainConfig()
    types = {f.name: type(getattr(cfg, f.name)) for f in fields(cfg)}
    updates = {}
    for item in args.set:
        key, _, value = item.partition("=")
        if key not in types:
            raise SystemExit(f"unknown config key {key!r}")
        updates[key] = _coerce(types[key], value)
    if args.checkpoint:
        updates["checkpoint"] = args.checkpoint
    return replace(cfg, **updates)


def describe(cfg: TrainConfig) -> str:
    return " ".join(f"{k}={v}" for k, v in asdict(cfg).items())
