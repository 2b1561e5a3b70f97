"""Typed sections of a composed job, one per subsystem."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DataSection:
    data_seed: int
    stores: int
    items: int
    days: int
    holdout_fraction: float
    base_rate: float
    rate_spread: float
    promo_share: float


@dataclass(frozen=True)
class AugmentSection:
    name: str
    thin_prob: float
    thin_keep: float


@dataclass(frozen=True)
class ModelSection:
    name: str
    hidden_dim: int
    depth: int
    activation: str
    embed_dim: int
    dropout: float


@dataclass(frozen=True)
class OptimSection:
    name: str
    lr: float
    weight_decay: float
    schedule: str
    warmup_steps: int
    min_lr_ratio: float
    grad_clip: float


@dataclass(frozen=True)
class TrainSection:
    loss: str
    batch_size: int
    epochs: int
    eval_every: int
    eval_batch_size: int
    patience: int
    log_every: int


@dataclass(frozen=True)
class EnsembleSection:
    seed: int
    members: int
    bag_fraction: float
