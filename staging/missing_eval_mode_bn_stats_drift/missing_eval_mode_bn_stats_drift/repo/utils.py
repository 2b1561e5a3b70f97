"""Small helpers shared by the entry points."""

from __future__ import annotations

import logging
import random

import torch


def seed_everything(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)


def configure_threads(num_threads: int) -> None:
    """One intra-op thread per job: the workers pack one job per core."""
    if num_threads > 0:
        torch.set_num_threads(num_threads)


def setup_logging() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
