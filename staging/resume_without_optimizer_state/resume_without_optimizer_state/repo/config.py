"""Run configuration of the demand forecaster's training job.

One dataclass holds every setting, so a run can be started from code
(``fit(TrainConfig(steps=60))``) or from the command line (``python train.py --set lr=0.002``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace


@dataclass
class TrainConfig:
    """Hyper-parameters, data sizes and checkpointing of one training run."""

    # reproducibility (see seeding.py)
    seed: int = 1234
    data_seed: int = 77

    # synthetic demand data (see dataset.py, transforms.py, loader.py)
    num_series: int = 256
    window: int = 24
    noise_std: float = 0.05
    normalize: bool = True
    holdout_rows: int = 128

    # model (see model.py)
    arch: str = "mlp"
    hidden_dim: int = 64
    depth: int = 2

    # optimisation (see losses.py, optim.py, schedules.py)
    loss: str = "mse"
    steps: int = 48
    batch_size: int = 32
    lr: float = 3e-3
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    schedule: str = "warmup_cosine"
    warmup_steps: int = 8
    min_lr_ratio: float = 0.1

    # checkpointing (see checkpointing.py, callbacks.py)
    checkpoint_dir: str = "checkpoints"
    run_name: str = "forecaster"
    ckpt_every: int = 5
    keep_last: int = 3
    resume: bool = False

    # logging
    log_every: int = 8

    def to_dict(self) -> dict:
        return asdict(self)

    def override(self, pairs: list[str]) -> TrainConfig:
        """A copy with ``key=value`` settings applied (values parsed as the field's type)."""
        types = {f.name: type(getattr(self, f.name)) for f in fields(self)}
        changes = {}
        for pair in pairs:
            key, _, text = pair.partition("=")
            if key not in types:
                raise SystemExit(f"unknown setting {key!r}; known: {', '.join(sorted(types))}")
            kind = types[key]
            changes[key] = text.lower() in ("1", "true", "yes") if kind is bool else kind(text)
        return replace(self, **changes)
