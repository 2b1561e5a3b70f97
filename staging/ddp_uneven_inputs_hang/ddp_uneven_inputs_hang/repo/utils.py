"""Small helpers: logging and seeding."""

from __future__ import annotations

import logging
import random

import torch


def setup_logging(rank: int) -> None:
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s [rank{rank}] %(message)s",
                        force=True)


def seed_everything(seed: int, rank: int) -> None:
    random.seed(seed + rank)
    torch.manual_seed(seed + rank)
