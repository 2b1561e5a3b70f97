"""Run configuration of the masked-reconstruction pretraining job (one dataclass, CLI overrides)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class TrainConfig:
    seed: int = 1234

    # data: synthetic sensor recordings, cut into windows
    num_series: int = 48          # sensor channels recorded
    series_len: int = 384         # samples per recording
    window: int = 64              # length of one training window
    train_windows: int = 1024     # windows drawn per training epoch
    val_windows: int = 256        # fixed validation windows

    # augmentation (train only)
    mask_ratio: float = 0.25      # fraction of each window hidden from the model
    jitter_std: float = 0.05
    scale_low: float = 0.8
    scale_high: float = 1.2

    # loading
    batch_size: int = 64
    num_workers: int = 2

    # model and optimisation
    model: str = "conv_imputer"
    hidden: int = 32
    kernel_size: int = 5
    epochs: int = 3
    lr: float = 3e-3
    weight_decay: float = 1e-4
    log_every: int = 8
