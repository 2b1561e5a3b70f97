"""One place that seeds every generator a run uses."""

from __future__ import annotations

import random

import torch


def seed_everything(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)
