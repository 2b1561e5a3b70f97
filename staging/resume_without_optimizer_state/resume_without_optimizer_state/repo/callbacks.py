"""Trainer callbacks: logging, periodic checkpoints, drills. Built by name from ``CALLBACKS``."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from config import TrainConfig
from registry import Registry

if TYPE_CHECKING:
    from trainer import Trainer

log = logging.getLogger("forecaster")
CALLBACKS = Registry("callback")


class Callback:
    def on_train_start(self, trainer: Trainer) -> None: ...

    def on_step_end(self, trainer: Trainer, loss: float) -> None: ...

    def on_train_end(self, trainer: Trainer) -> None: ...


@CALLBACKS.register("log")
class LogProgress(Callback):
    def __init__(self, cfg: TrainConfig) -> None:
        self.every = cfg.log_every

    def on_step_end(self, trainer: Trainer, loss: float) -> None:
        step = trainer.progress.step
        if self.every and (step % self.every == 0 or step == trainer.cfg.steps):
            log.info("step %3d/%d  epoch %d  loss %.5f  lr %.2e  |g| %.3f", step, trainer.cfg.steps,
                     trainer.progress.epoch, loss, trainer.optim.lr, trainer.last_grad_norm)


@CALLBACKS.register("checkpoint")
class PeriodicCheckpoint(Callback):
    """Saves the trainer's state every ``ckpt_every`` steps and at the end of training."""

    def __init__(self, cfg: TrainConfig) -> None:
        self.every = cfg.ckpt_every

    def on_step_end(self, trainer: Trainer, loss: float) -> None:
        if self.every and trainer.progress.step % self.every == 0:
            trainer.save_checkpoint()

    def on_train_end(self, trainer: Trainer) -> None:
        if not self.every or trainer.progress.step % self.every:
            trainer.save_checkpoint()


@CALLBACKS.register("nan_guard")
class NanGuard(Callback):
    """Stops a run whose loss is no longer finite instead of checkpointing garbage."""

    def __init__(self, cfg: TrainConfig) -> None:
        pass

    def on_step_end(self, trainer: Trainer, loss: float) -> None:
        if loss != loss or loss in (float("inf"), float("-inf")):
            raise FloatingPointError(f"loss is {loss} at step {trainer.progress.step}")


DEFAULT_CALLBACKS = ("log", "nan_guard", "checkpoint")


def build_callbacks(cfg: TrainConfig, names: tuple[str, ...] = DEFAULT_CALLBACKS) -> list[Callback]:
    return [CALLBACKS.build(name, cfg) for name in names]


class Preempt(Callback):
    """Stops the run after ``at_step`` steps, the way a pre-empted worker stops (for drills)."""

    def __init__(self, at_step: int) -> None:
        self.at_step = at_step

    def on_step_end(self, trainer: Trainer, loss: float) -> None:
        if trainer.progress.step == self.at_step:
            raise Preempted(self.at_step)


class Preempted(Exception):
    def __init__(self, step: int) -> None:
        super().__init__(f"worker pre-empted after step {step}")
        self.step = step
