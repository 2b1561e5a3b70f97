"""Training configuration of the inspection classifier (one dataclass, overridable from the CLI)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class TrainConfig:
    # data (synthetic sensor frames; see data.py)
    plant_seed: int = 3
    data_seed: int = 7
    n_train: int = 768
    n_val: int = 256
    n_features: int = 24
    n_classes: int = 5
    noise_std: float = 0.05  # feature jitter added to every training batch
    # model
    arch: str = "mlp"
    hidden_dim: int = 64
    depth: int = 2
    dropout: float = 0.1
    # optimisation
    seed: int = 0
    lr: float = 3e-3
    weight_decay: float = 1e-4
    batch_size: int = 64
    epochs: int = 6
    warmup_epochs: int = 1
    label_smoothing: float = 0.05
    # checkpoints
    ckpt_dir: str = "checkpoints"
    resume: str = ""  # a checkpoint path, "auto" (the newest in ckpt_dir) or "" (start fresh)
    restore_best: bool = True  # load best.pt into the model when training ends
    monitor: str = "val_f1"
    patience: int = 0  # early stopping; 0 disables it
    log_every: int = 0
