"""Seeding and logging."""

from __future__ import annotations

import logging
import random

import torch


def seed_everything(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)


def get_logger(name: str, rank: int | None = None) -> logging.Logger:
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    log = logging.getLogger(name if rank is None else f"{name}.rank{rank}")
    return log
