"""Reproducibility helpers."""

from __future__ import annotations

import random

import torch


def seed_everything(seed: int, num_threads: int) -> None:
    """Same seed, same thread count: the same numbers on every worker."""
    random.seed(seed)
    torch.manual_seed(seed)
    torch.set_num_threads(num_threads)
