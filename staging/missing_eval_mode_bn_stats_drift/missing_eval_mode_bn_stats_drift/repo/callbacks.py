"""Trainer callbacks: periodic validation, BatchNorm freezing, checkpointing, progress logging."""

from __future__ import annotations

import logging
from pathlib import Path

from torch.utils.data import DataLoader

from checkpoint import save_checkpoint
from evaluation import evaluate
from freezing import freeze_batchnorm

logger = logging.getLogger("churn")


class Callback:
    """Hooks the trainer calls; ``logs`` is the epoch's record, shared by all callbacks."""

    def on_fit_start(self, trainer) -> None:
        pass

    def on_epoch_start(self, trainer, epoch: int) -> None:
        pass

    def on_epoch_end(self, trainer, epoch: int, logs: dict) -> None:
        pass

    def on_fit_end(self, trainer) -> None:
        pass


class FreezeNormStats(Callback):
    """After ``after`` epochs the BatchNorm running statistics stop moving: the remaining epochs
    train against fixed feature scaling, and the exported statistics are the training set's."""

    def __init__(self, after: int) -> None:
        self.after = after

    def on_epoch_start(self, trainer, epoch: int) -> None:
        if self.after and epoch == self.after + 1:
            n = freeze_batchnorm(trainer.model)
            logger.info("epoch %2d  froze running statistics of %d BatchNorm layers", epoch, n)


class ValidationCallback(Callback):
    """Scores the model on the validation split every ``every`` epochs (0: never)."""

    def __init__(self, loader: DataLoader, every: int = 1) -> None:
        self.loader = loader
        self.every = every

    def on_epoch_end(self, trainer, epoch: int, logs: dict) -> None:
        if self.every <= 0 or epoch % self.every:
            return
        metrics = evaluate(trainer.model, self.loader)
        logs.update({f"val_{k}": v for k, v in metrics.items()})


class CheckpointCallback(Callback):
    """Keeps ``last.pt`` and the checkpoint with the best monitored metric as ``best.pt``."""

    def __init__(self, out_dir: str, monitor: str = "val_acc") -> None:
        self.out_dir = Path(out_dir)
        self.monitor = monitor
        self.best_value = float("-inf")
        self.best_epoch = 0

    @property
    def best_path(self) -> Path:
        return self.out_dir / ("best.pt" if self.best_epoch else "last.pt")

    def on_epoch_end(self, trainer, epoch: int, logs: dict) -> None:
        value = logs.get(self.monitor)
        if value is None or value <= self.best_value:
            return
        self.best_value, self.best_epoch = value, epoch
        save_checkpoint(self.out_dir / "best.pt", trainer.model, epoch, logs)

    def on_fit_end(self, trainer) -> None:
        save_checkpoint(self.out_dir / "last.pt", trainer.model, trainer.epoch, trainer.history[-1])


class ProgressLogger(Callback):
    def on_fit_start(self, trainer) -> None:
        n_params = sum(p.numel() for p in trainer.model.parameters())
        logger.info("train rows %d (%d batches/epoch), %d epochs, params %d",
                    len(trainer.train_loader.dataset), len(trainer.train_loader), trainer.epochs, n_params)

    def on_epoch_end(self, trainer, epoch: int, logs: dict) -> None:
        line = f"epoch {epoch:2d}  train_loss {logs['train_loss']:.4f}"
        if "val_acc" in logs:
            line += f"  val_loss {logs['val_loss']:.4f}  val_acc {logs['val_acc']:.4f}"
        logger.info(line)
