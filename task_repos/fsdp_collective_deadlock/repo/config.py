"""Run configuration for the sharded sensor-classifier baseline.

Every knob of a run lives in :class:`TrainConfig`. ``python train.py`` uses the defaults
below; experiments and tests build their own instance (``TrainConfig(epochs=1, ...)``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class TrainConfig:
    """Hyper-parameters and distributed settings for one training run."""

    # data (synthetic, generated in-process from ``seed``)
    num_features: int = 32
    num_classes: int = 5
    train_samples: int = 2048
    val_samples: int = 512
    batch_size: int = 32  # per rank

    # model
    hidden_dim: int = 128
    num_blocks: int = 3

    # optimisation
    epochs: int = 3
    lr: float = 5e-4
    weight_decay: float = 0.01
    seed: int = 1234

    # distributed
    world_size: int = 2
    backend: str = "gloo"
    master_addr: str = "127.0.0.1"
    master_port: int = 0  # 0: pick a free port at launch
    pg_timeout_s: float = 10.0  # collective timeout; keep short so stuck jobs fail fast

    # logging
    log_every: int = 20  # optimizer steps between progress lines
