"""Small helpers shared by the training scripts."""

from __future__ import annotations

import logging
import random

import torch


def seed_all(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)


def get_logger(name: str) -> logging.Logger:
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    return logging.getLogger(name)


def count_parameters(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
