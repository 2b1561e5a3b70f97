"""Trainer callbacks: progress logging and the per-epoch history."""

from __future__ import annotations

import logging
from typing import Any

logger = logging.getLogger("faults")


class Callback:
    def on_fit_start(self, trainer: Any) -> None: ...
    def on_step_end(self, trainer: Any, step: int, loss: float) -> None: ...
    def on_epoch_end(self, trainer: Any, epoch: int, metrics: dict[str, float]) -> None: ...


class ProgressLogger(Callback):
    def __init__(self, every: int) -> None:
        self.every = every

    def on_fit_start(self, trainer: Any) -> None:
        n_params = sum(p.numel() for p in trainer.model.parameters())
        cfg = trainer.cfg
        logger.info("model %s depth %d width %d activation %s, %d params; train %d rows (%d batches), val %d rows",
                    cfg.model_name, cfg.depth, cfg.width, cfg.activation, n_params,
                    trainer.loaders.num_train, len(trainer.loaders.train), trainer.loaders.num_val)

    def on_step_end(self, trainer: Any, step: int, loss: float) -> None:
        if self.every and step % self.every == 0:
            logger.info("epoch %d step %3d/%d  loss %.4f  lr %.2e", trainer.epoch, step,
                        len(trainer.loaders.train), loss, trainer.scheduler.get_last_lr()[0])

    def on_epoch_end(self, trainer: Any, epoch: int, metrics: dict[str, float]) -> None:
        logger.info("epoch %d  train_loss %.4f  val_loss %.4f  val_acc %.4f", epoch,
                    metrics["train_loss"], metrics["val_loss"], metrics["val_acc"])


class History(Callback):
    def __init__(self) -> None:
        self.epochs: list[dict[str, float]] = []

    def on_epoch_end(self, trainer: Any, epoch: int, metrics: dict[str, float]) -> None:
        self.epochs.append(dict(metrics))

    def series(self, key: str) -> list[float]:
        return [m[key] for m in self.epochs]
