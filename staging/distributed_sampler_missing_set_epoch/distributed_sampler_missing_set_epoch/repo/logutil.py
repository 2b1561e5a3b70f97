"""Logging set-up shared by the ranks: rank 0 logs progress, the others only warnings."""

from __future__ import annotations

import logging

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def setup_logging(rank: int) -> None:
    logging.basicConfig(level=logging.INFO if rank == 0 else logging.WARNING,
                        format=f"[rank{rank}] {FORMAT}", force=True)


def get_logger(name: str) -> logging.Logger:
    return logging.getLogger(f"router.{name}")
