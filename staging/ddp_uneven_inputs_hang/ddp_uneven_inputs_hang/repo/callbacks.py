"""Trainer callbacks: progress logging, history, checkpoints."""

from __future__ import annotations

import logging
import os
from typing import Any

import torch

from distributed import barrier

log = logging.getLogger("cellwear")


class Callback:
    def on_fit_start(self, trainer: Any) -> None: ...
    def on_step_end(self, trainer: Any, step: int, loss: float) -> None: ...
    def on_epoch_end(self, trainer: Any, epoch: int, record: dict[str, float]) -> None: ...


class LogProgress(Callback):
    def __init__(self, every: int) -> None:
        self.every = every

    def on_fit_start(self, trainer: Any) -> None:
        if trainer.rank == 0:
            log.info("training on %d ranks, batch size %d per rank, %d epochs", trainer.data.world_size,
                     trainer.cfg.batch_size, trainer.cfg.epochs)

    def on_step_end(self, trainer: Any, step: int, loss: float) -> None:
        if self.every and trainer.rank == 0 and step % self.every == 0:
            log.info("epoch %d step %d loss %.5f", trainer.epoch + 1, step, loss)

    def on_epoch_end(self, trainer: Any, epoch: int, record: dict[str, float]) -> None:
        if trainer.rank == 0:
            log.info("epoch %d train_loss %.6f val_loss %.6f labelled %d lr %.4g", epoch + 1,
                     record["train_loss"], record["val_loss"], record["labelled"], record["lr"])


class History(Callback):
    def __init__(self) -> None:
        self.records: list[dict[str, float]] = []

    def on_epoch_end(self, trainer: Any, epoch: int, record: dict[str, float]) -> None:
        self.records.append(dict(record))


class Checkpoint(Callback):
    """Rank 0 writes the model after every epoch, once every rank has finished the epoch."""

    def __init__(self, out_dir: str, enabled: bool = True) -> None:
        self.out_dir, self.enabled = out_dir, enabled

    def on_epoch_end(self, trainer: Any, epoch: int, record: dict[str, float]) -> None:
        if not self.enabled:
            return
        barrier()
        if trainer.rank == 0:
            os.makedirs(self.out_dir, exist_ok=True)
            torch.save({"model": trainer.model.state_dict(), "epoch": epoch + 1, "metrics": record},
                       os.path.join(self.out_dir, "last.pt"))
