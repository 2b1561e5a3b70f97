"""Run configuration for the tabular regression trainer.

All knobs live in one dataclass so experiments can be launched from code
(``fit(Config(epochs=2))``) or from the command line (``python train.py``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass
class Config:
    """Hyper-parameters and data sizes for one training run."""

    # reproducibility
    seed: int = 1234

    # synthetic data set (see data_loader.py)
    n_features: int = 64
    n_train: int = 131072
    n_val: int = 393216
    noise_std: float = 0.1

    # model
    hidden_dim: int = 128

    # optimisation
    epochs: int = 3
    train_batch_size: int = 1024
    eval_batch_size: int = 16384
    lr: float = 2e-3
    weight_decay: float = 1e-4

    # logging
    log_every: int = 32

    def to_dict(self) -> dict:
        return asdict(self)
