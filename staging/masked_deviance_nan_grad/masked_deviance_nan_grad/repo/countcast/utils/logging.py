"""Logging set-up shared by the CLI and the library (the library only ever calls get_logger)."""

from __future__ import annotations

import logging
import sys

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def get_logger(name: str = "countcast") -> logging.Logger:
    return logging.getLogger(name if name.startswith("countcast") else f"countcast.{name}")


def configure(level: int = logging.INFO) -> None:
    root = logging.getLogger()
    if not root.handlers:
        handler = logging.StreamHandler(sys.stdout)
        handler.setFormatter(logging.Formatter(FORMAT))
        root.addHandler(handler)
    root.setLevel(level)
