"""Run configuration for the churn classifier.

Every knob of a run lives in one dataclass, so a run can be started from code
(``fit(Config(epochs=4))``) or from the command line (``python train.py``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass
class Config:
    """Hyper-parameters, data sizes and bookkeeping for one training run."""

    # reproducibility
    seed: int = 7
    data_seed: int = 2024

    # synthetic account table (see data.py)
    n_features: int = 24
    n_classes: int = 4
    n_train: int = 3072
    n_val: int = 768
    n_test: int = 1536
    label_noise: float = 0.05

    # model (see model.py; the registry maps `arch` to a builder)
    arch: str = "mlp_bn"
    hidden_dim: int = 64
    n_blocks: int = 2
    dropout: float = 0.2

    # optimisation (schedule.py: linear warmup, then cosine decay to min_lr_ratio * lr)
    epochs: int = 8
    batch_size: int = 64
    eval_batch_size: int = 256
    lr: float = 3e-3
    weight_decay: float = 1e-4
    warmup_epochs: int = 1
    min_lr_ratio: float = 0.05
    grad_clip: float = 5.0

    # BatchNorm running statistics are frozen after this many epochs (0: never)
    freeze_norm_after: int = 3

    # validation every `val_every` epochs (0: no validation, the last epoch is kept)
    val_every: int = 1
    out_dir: str = "runs/latest"

    # runtime: the batch workers run one job per core
    num_threads: int = 1

    # logging
    log_every: int = 0

    def to_dict(self) -> dict:
        return asdict(self)
