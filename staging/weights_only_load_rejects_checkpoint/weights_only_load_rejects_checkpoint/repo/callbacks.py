"""Epoch-end callbacks: periodic and best-model checkpoints, early stopping, logging."""

from __future__ import annotations

import logging

import numpy as np

from checkpointing import load_checkpoint, save_checkpoint

log = logging.getLogger("inspect.callbacks")


class Callback:
    name = "callback"

    def on_epoch_end(self, trainer, metrics: dict) -> None: ...

    def on_train_end(self, trainer) -> None: ...

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None: ...


class PeriodicCheckpoint(Callback):
    name = "periodic"

    def on_epoch_end(self, trainer, metrics: dict) -> None:
        state = trainer.state_dict()
        save_checkpoint(state, trainer.run_dir / f"epoch_{trainer.epoch:03d}.pt")
        save_checkpoint(state, trainer.run_dir / "last.pt")


class BestCheckpoint(Callback):
    """Keeps best.pt for the monitored metric; restores it into the model when training ends."""

    name = "best"

    def __init__(self, monitor: str, restore: bool) -> None:
        self.monitor = monitor
        self.restore = restore
        self.best = -np.inf
        self.best_epoch = 0

    def on_epoch_end(self, trainer, metrics: dict) -> None:
        score = metrics[self.monitor]
        if score > self.best:
            self.best, self.best_epoch = score, trainer.epoch
            save_checkpoint(trainer.state_dict(), trainer.run_dir / "best.pt")
            log.info("new best %s %.4f at epoch %d", self.monitor, score, trainer.epoch)

    def on_train_end(self, trainer) -> None:
        path = trainer.run_dir / "best.pt"
        if self.restore and path.is_file():
            state = load_checkpoint(path)
            trainer.model.load_state_dict(state["model"])
            log.info("restored best weights from epoch %d (%s %.4f)", self.best_epoch, self.monitor, self.best)

    def state_dict(self) -> dict:
        return {"best": self.best, "best_epoch": self.best_epoch}

    def load_state_dict(self, state: dict) -> None:
        self.best, self.best_epoch = state["best"], state["best_epoch"]


class EarlyStopping(Callback):
    name = "early_stopping"

    def __init__(self, monitor: str, patience: int) -> None:
        self.monitor, self.patience = monitor, patience
        self.best = -np.inf
        self.wait = 0

    def on_epoch_end(self, trainer, metrics: dict) -> None:
        score = metrics[self.monitor]
        if score > self.best:
            self.best, self.wait = score, 0
            return
        self.wait += 1
        if self.patience and self.wait >= self.patience:
            log.info("early stopping at epoch %d: no %s improvement in %d epochs", trainer.epoch, self.monitor,
                     self.wait)
            trainer.should_stop = True

    def state_dict(self) -> dict:
        return {"best": self.best, "wait": self.wait}

    def load_state_dict(self, state: dict) -> None:
        self.best, self.wait = state["best"], state["wait"]


class EpochLogger(Callback):
    name = "logger"

    def on_epoch_end(self, trainer, metrics: dict) -> None:
        row = trainer.history.rows[-1]
        log.info("epoch %d/%d  train_loss %.4f  val_acc %.4f  val_f1 %.4f  lr %.2e", trainer.epoch,
                 trainer.cfg.epochs, row["train_loss"], metrics["val_acc"], metrics["val_f1"],
                 trainer.optimizer.param_groups[0]["lr"])
