"""Trainer callbacks: logging and periodic checkpoints."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from trainer import Trainer

log = logging.getLogger("forecaster")


class Callback:
    def on_train_start(self, trainer: Trainer) -> None: ...

    def on_step_end(self, trainer: Trainer, loss: float) -> None: ...

    def on_train_end(self, trainer: Trainer) -> None: ...


class LogProgress(Callback):
    def __init__(self, every: int) -> None:
        self.every = every

    def on_step_end(self, trainer: Trainer, loss: float) -> None:
        step = trainer.progress.step
        if self.every and (step % self.every == 0 or step == trainer.cfg.steps):
            log.info("step %3d/%d  loss %.5f  lr %.2e", step, trainer.cfg.steps, loss, trainer.optim.lr)


class PeriodicCheckpoint(Callback):
    """Saves the trainer's state every ``every`` steps and at the end of training."""

    def __init__(self, every: int) -> None:
        self.every = every

    def on_step_end(self, trainer: Trainer, loss: float) -> None:
        if self.every and trainer.progress.step % self.every == 0:
            trainer.save_checkpoint()

    def on_train_end(self, trainer: Trainer) -> None:
        if trainer.progress.step % self.every:
            trainer.save_checkpoint()


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
