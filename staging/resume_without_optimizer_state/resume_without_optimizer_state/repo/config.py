"""Run configuration of the demand forecaster's training job.

One dataclass holds every setting, so a run can be started from code
(``fit(TrainConfig(steps=60))``) or from the command line (``python train.py``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass
class TrainConfig:
    """Hyper-parameters, data sizes and checkpointing of one training run."""

    # reproducibility
    seed: int = 1234
    data_seed: int = 77

    # synthetic demand data (see data.py)
    num_series: int = 768
    window: int = 24
    noise_std: float = 0.05

    # model (see model.py)
    arch: str = "mlp"
    hidden_dim: int = 64

    # optimisation (see optim.py)
    steps: int = 48
    batch_size: int = 32
    lr: float = 3e-3
    weight_decay: float = 0.01
    warmup_steps: int = 8
    min_lr_ratio: float = 0.1

    # checkpointing (see checkpointing.py)
    checkpoint_dir: str = "checkpoints"
    run_name: str = "forecaster"
    ckpt_every: int = 5
    keep_last: int = 3
    resume: bool = False

    # logging
    log_every: int = 8

    def to_dict(self) -> dict:
        return asdict(self)
