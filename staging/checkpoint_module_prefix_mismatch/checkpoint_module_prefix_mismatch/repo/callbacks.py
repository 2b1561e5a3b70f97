"""Trainer callbacks: logging and publishing the best checkpoint."""

from __future__ import annotations

from pathlib import Path

from checkpointing import save_checkpoint
from config import TrainConfig
from registry import CALLBACKS
from utils import get_logger

log = get_logger("train")


class Callback:
    def on_step_end(self, trainer, loss: float) -> None:
        pass

    def on_validation_end(self, trainer, metrics: dict[str, float]) -> None:
        pass


@CALLBACKS.register("log")
class LogProgress(Callback):
    def __init__(self, cfg: TrainConfig) -> None:
        self.every = cfg.log_every

    def on_step_end(self, trainer, loss: float) -> None:
        if self.every and trainer.step % self.every == 0:
            log.info("step %d loss %.4f", trainer.step, loss)

    def on_validation_end(self, trainer, metrics: dict[str, float]) -> None:
        log.info("epoch %d val_loss %.6f val_acc %.6f", trainer.epoch, metrics["val_loss"], metrics["val_acc"])


@CALLBACKS.register("best_checkpoint")
class BestCheckpoint(Callback):
    def __init__(self, cfg: TrainConfig) -> None:
        self.path = Path(cfg.out_dir) / "best.pt"
        self.best = float("inf")
        self.best_metrics: dict[str, float] | None = None

    def on_validation_end(self, trainer, metrics: dict[str, float]) -> None:
        if metrics["val_loss"] < self.best:
            self.best, self.best_metrics = metrics["val_loss"], dict(metrics)
            save_checkpoint(self.path, trainer, metrics)
            log.info("epoch %d: new best val_loss %.6f, checkpoint %s", trainer.epoch, self.best, self.path)


def build_callbacks(cfg: TrainConfig, names: tuple[str, ...] = ("log", "best_checkpoint")) -> list[Callback]:
    return [CALLBACKS.get(n)(cfg) for n in names]
