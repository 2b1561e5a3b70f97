"""Trainer callbacks: progress logging, validation, LR on plateau, checkpoints."""

from __future__ import annotations

from pathlib import Path

import torch

import distributed
from checkpoint import save_checkpoint
from config import TrainConfig
from evaluation import evaluate
from registry import CALLBACKS
from utils import get_logger

log = get_logger("train")


class Callback:
    order = 0

    def on_fit_start(self, trainer) -> None:
        pass

    def on_step_end(self, trainer, loss: float) -> None:
        pass

    def on_epoch_end(self, trainer) -> None:
        pass


@CALLBACKS.register("progress")
class Progress(Callback):
    order = 90

    def __init__(self, cfg: TrainConfig) -> None:
        self.every = cfg.log_every

    def on_step_end(self, trainer, loss: float) -> None:
        if self.every and trainer.step % self.every == 0 and distributed.is_main():
            log.info("step %d loss %.4f", trainer.step, loss)

    def on_epoch_end(self, trainer) -> None:
        if distributed.is_main():
            m = trainer.metrics
            log.info("epoch %d/%d train_loss %.4f val_loss %.4f val_acc %.4f lr %.4g", trainer.epoch,
                     trainer.cfg.epochs, trainer.train_loss, m["val_loss"], m["val_acc"], trainer.lr)


@CALLBACKS.register("validation")
class Validation(Callback):
    """Validation on rank 0 after every epoch; the other ranks receive its metrics."""

    order = 10

    def __init__(self, cfg: TrainConfig) -> None:
        self.cfg = cfg
        self.loader = None

    def on_fit_start(self, trainer) -> None:
        if distributed.is_main():
            self.loader = trainer.data.val_loader()

    def on_epoch_end(self, trainer) -> None:
        metrics = {"val_loss": 0.0, "val_acc": 0.0}
        if distributed.is_main():
            metrics = evaluate(trainer.model, self.loader)
        trainer.metrics = distributed.share_from_main(metrics)


@CALLBACKS.register("plateau")
class PlateauLR(Callback):
    """Halve the learning rate when the validation loss stops improving (same decision on every rank)."""

    order = 20

    def __init__(self, cfg: TrainConfig) -> None:
        self.cfg = cfg
        self.scheduler = None

    def on_fit_start(self, trainer) -> None:
        self.scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(
            trainer.optimizer, mode="min", factor=self.cfg.plateau_factor, patience=self.cfg.plateau_patience)

    def on_epoch_end(self, trainer) -> None:
        self.scheduler.step(trainer.metrics["val_loss"])


@CALLBACKS.register("checkpoint")
class Checkpoint(Callback):
    """Rank 0 writes ``last.pt`` after every epoch (and ``best.pt`` on a new best validation loss)."""

    order = 30

    def __init__(self, cfg: TrainConfig) -> None:
        self.cfg = cfg
        self.best = float("inf")

    def on_epoch_end(self, trainer) -> None:
        if not distributed.is_main():
            return
        out = Path(self.cfg.out_dir)
        model = distributed.unwrap(trainer.model)
        save_checkpoint(out / "last.pt", model, self.cfg, trainer.epoch, trainer.metrics)
        if trainer.metrics["val_loss"] < self.best:
            self.best = trainer.metrics["val_loss"]
            save_checkpoint(out / "best.pt", model, self.cfg, trainer.epoch, trainer.metrics)


def build_callbacks(cfg: TrainConfig) -> list[Callback]:
    return sorted((CALLBACKS.get(n)(cfg) for n in cfg.callbacks), key=lambda cb: cb.order)
