"""Seeding. A member's seed is derived from the job seed and the member index, so members differ
and a job re-run with the same seed trains the same ensemble."""

from __future__ import annotations

import hashlib
import random

import torch


def derive_seed(*parts: object) -> int:
    text = "/".join(str(p) for p in parts).encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "little") % (2**31 - 1)


def seed_everything(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)


def generator(seed: int) -> torch.Generator:
    g = torch.Generator()
    g.manual_seed(seed)
    return g
