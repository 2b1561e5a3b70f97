"""Step checkpoints on local disk: atomic writes, the newest ``keep_last`` kept.

Checkpoints are plain state (tensors, numbers, strings, dicts and lists) and are always read
with ``torch.load(..., weights_only=True)``: the security review does not allow unpickling
arbitrary objects from shared storage.
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import Any

import torch

log = logging.getLogger("forecaster.ckpt")
_NAME = re.compile(r"step_(\d{6})\.pt$")


class CheckpointManager:
    def __init__(self, directory: str | os.PathLike, keep_last: int = 3) -> None:
        self.directory = Path(directory)
        self.keep_last = keep_last

    def checkpoints(self) -> list[tuple[int, Path]]:
        if not self.directory.is_dir():
            return []
        found = []
        for p in self.directory.iterdir():
            m = _NAME.search(p.name)
            if m:
                found.append((int(m.group(1)), p))
        return sorted(found)

    def latest(self) -> Path | None:
        found = self.checkpoints()
        return found[-1][1] if found else None

    def clear(self) -> None:
        for _, p in self.checkpoints():
            p.unlink()

    def save(self, step: int, payload: dict[str, Any]) -> Path:
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / f"step_{step:06d}.pt"
        tmp = path.with_suffix(".tmp")
        torch.save(payload, tmp)
        os.replace(tmp, path)
        for _, old in self.checkpoints()[:-self.keep_last]:
            old.unlink()
        log.debug("saved %s", path)
        return path

    def load(self, path: str | os.PathLike) -> dict[str, Any]:
        return torch.load(path, map_location="cpu", weights_only=True)
