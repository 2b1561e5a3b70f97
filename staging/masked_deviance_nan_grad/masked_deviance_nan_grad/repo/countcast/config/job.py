"""The job configuration: every setting of a nightly run, flat.

Flat on purpose: a scheduler entry, a ``--set key=value`` override and a sweep all address one
namespace. :func:`countcast.config.compose.compose` groups the fields into the sections the
components take.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass
class JobConfig:
    # ensemble and reproducibility
    seed: int = 20261123          # the nightly job passes the run date
    members: int = 6              # bagged ensemble members, each trained on its own subsample
    bag_fraction: float = 0.8     # share of the training rows each member sees

    # data (countcast.data)
    data_seed: int = 7
    stores: int = 12
    items: int = 40
    days: int = 8
    holdout_fraction: float = 0.2
    base_rate: float = 3.0        # log of the typical daily units of an item in a store
    rate_spread: float = 0.6
    promo_share: float = 0.15

    # augmentation (countcast.data.augment)
    augment: str = "thinning"
    thin_prob: float = 0.1        # share of training rows thinned per batch
    thin_keep: float = 0.9        # binomial keep probability of a thinned row

    # model (countcast.models)
    model: str = "mlp"
    hidden_dim: int = 32
    depth: int = 2
    activation: str = "silu"
    embed_dim: int = 4
    dropout: float = 0.0

    # objective and optimisation (countcast.losses, countcast.optim)
    loss: str = "poisson"
    optimizer: str = "adamw"
    lr: float = 0.01
    weight_decay: float = 1e-4
    schedule: str = "warmup_cosine"
    warmup_steps: int = 10
    min_lr_ratio: float = 0.05
    grad_clip: float = 5.0
    batch_size: int = 64
    epochs: int = 4

    # monitoring (countcast.callbacks)
    eval_every: int = 25          # holdout deviance every N steps (0: only at the end)
    eval_batch_size: int = 256
    patience: int = 0             # early stopping on the monitored deviance (0: off)
    log_every: int = 0            # 0: no per-step lines
    extra_callbacks: str = ""     # comma-separated callback names run after the nightly ones

    def to_dict(self) -> dict:
        return asdict(self)
