"""Run configuration of the cell-wear regressor (one dataclass; train.py fills it from the CLI)."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass
class TrainConfig:
    # data: telemetry shard files, written per vehicle depot (sizes differ from file to file)
    data_seed: int = 2024
    n_shards: int = 10
    min_shard_rows: int = 40
    max_shard_rows: int = 180
    n_val_shards: int = 4
    n_features: int = 12
    label_missing_rate: float = 0.08  # rows whose wear label was not measured (NaN target)

    # model
    arch: str = "resmlp"
    hidden_dim: int = 64
    depth: int = 2

    # optimisation
    seed: int = 7
    epochs: int = 3
    batch_size: int = 32
    lr: float = 0.05
    weight_decay: float = 1e-4
    lr_decay: float = 0.7  # per epoch
    huber_delta: float = 1.0

    # distributed (gloo on CPU; one process per rank)
    world_size: int = 2
    backend: str = "gloo"
    master_addr: str = "127.0.0.1"
    master_port: int = 29511
    dist_timeout_s: float = 15.0

    # bookkeeping
    out_dir: str = "runs/cellwear"
    log_every: int = 10
    save_checkpoints: bool = True

    def describe(self) -> str:
        return " ".join(f"{k}={v}" for k, v in asdict(self).items())
