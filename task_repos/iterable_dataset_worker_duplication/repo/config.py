"""Run configuration of the scorecard fit (one dataclass, overridable from the command line)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Config:
    # data: the nightly export of the events table, written as CSV shards plus a manifest
    data_dir: str = "data/export"
    num_records: int = 2501
    num_shards: int = 7
    num_features: int = 8
    label_noise: float = 0.5
    shuffle_shards: bool = True

    # loader
    batch_size: int = 256
    num_workers: int = 2

    # model
    model: str = "mlp_scorer"
    hidden_dim: int = 16

    # optimisation: one step per full pass over the export (exact full-batch gradient)
    epochs: int = 6
    lr: float = 0.5
    momentum: float = 0.9
    weight_decay: float = 0.0

    seed: int = 1234
    log_every: int = 1
