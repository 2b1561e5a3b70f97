"""Run configuration of the fault classifier.

Every setting lives in one dataclass, so a run can be launched from code
(``fit(TrainConfig(epochs=2))``), from the command line (``python train.py --help``)
or from the sweep (``sweep.sh``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass
class TrainConfig:
    """Hyper-parameters, data sizes and logging of one training run."""

    # reproducibility
    seed: int = 17
    data_seed: int = 2024
    num_threads: int = 1  # the batch workers are single-core slots

    # synthetic telemetry windows (see datamodule.py)
    num_features: int = 24
    num_classes: int = 5
    train_size: int = 2048
    val_size: int = 512
    label_noise: float = 0.05

    # model (see model.py; activations are looked up in activations.ACTIVATIONS)
    model_name: str = "gated_mlp"
    width: int = 48
    hidden: int = 96
    depth: int = 2
    activation: str = "gelu"
    dropout: float = 0.1
    gate_floor: float = 0.05

    # optimisation
    epochs: int = 3
    batch_size: int = 64
    lr: float = 3e-3
    weight_decay: float = 0.01
    warmup_steps: int = 20
    grad_clip: float = 1.0

    # logging
    log_every: int = 16

    def to_dict(self) -> dict:
        return asdict(self)
