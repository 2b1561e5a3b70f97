"""Run configuration for the multi-task tabular model."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Config:
    """Hyper-parameters and runtime settings.

    The defaults reproduce the small CPU smoke run used in CI; the production job
    overrides ``world_size``, ``steps`` and the data sizes from the launcher.
    """

    # reproducibility
    seed: int = 0
    data_seed: int = 17

    # data
    num_samples: int = 2048
    num_features: int = 32
    num_classes: int = 6
    batch_size: int = 32
    noise_std: float = 0.1

    # model
    hidden_dim: int = 64
    dropout: float = 0.0

    # optimisation
    steps: int = 30
    lr: float = 0.2
    # The reconstruction objective is a regulariser: it is only evaluated every
    # ``aux_every`` steps to keep the step time close to the single-task baseline.
    aux_every: int = 4
    aux_weight: float = 0.5

    # distributed runtime
    world_size: int = 2
    backend: str = "gloo"
    master_addr: str = "127.0.0.1"
    master_port: int | None = None  # None: pick a free port at launch
    timeout_s: float = 10.0

    # logging
    log_every: int = 1
