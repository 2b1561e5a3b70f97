"""Job configuration: a dataclass with defaults, overridable with ``--set key=value``."""

from __future__ import annotations

import argparse
from dataclasses import asdict, dataclass, fields, replace


@dataclass
class TrainConfig:
    seed: int = 13
    data_seed: int = 2024
    n_train: int = 384
    n_val: int = 128
    vocab_size: int = 48
    n_classes: int = 3
    min_len: int = 6
    max_len: int = 64
    model: str = "session_encoder"
    d_model: int = 32
    n_heads: int = 2
    depth: int = 2
    ff_mult: int = 2
    rel_buckets: int = 16
    rel_max_distance: int = 64
    epochs: int = 2
    batch_size: int = 32
    group_size: int = 4
    pad_to_multiple_of: int = 0
    lr: float = 2e-3
    weight_decay: float = 0.01
    compile: bool = True
    compile_backend: str = "eager"
    fullgraph: bool = True
    static_shapes: bool = True
    max_graphs: int = 6
    log_every: int = 0


def _coerce(kind: type, text: str):
    if kind is bool:
        return text.lower() in ("1", "true", "yes", "on")
    return kind(text)


def parse_args(argv: list[str] | None = None) -> TrainConfig:
    parser = argparse.ArgumentParser(description="train the session intent classifier")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)
    cfg = TrainConfig()
    types = {f.name: type(getattr(cfg, f.name)) for f in fields(cfg)}
    updates = {}
    for item in args.set:
        key, _, value = item.partition("=")
        if key not in types:
            raise SystemExit(f"unknown config key {key!r}")
        updates[key] = _coerce(types[key], value)
    return replace(cfg, **updates)


def describe(cfg: TrainConfig) -> str:
    return " ".join(f"{k}={v}" for k, v in asdict(cfg).items())
