"""Trainer callbacks, looked up by name from the config."""

from __future__ import annotations

from utils import get_logger

log = get_logger("train")
CALLBACKS: dict[str, type] = {}


def register_callback(name: str):
    def wrap(cls: type) -> type:
        CALLBACKS[name] = cls
        return cls
    return wrap


class Callback:
    def on_fit_start(self, trainer) -> None: ...
    def on_optimizer_step(self, trainer, step: int, loss: float) -> None: ...
    def on_epoch_end(self, trainer, epoch: int, val_loss: float) -> None: ...


@register_callback("progress")
class ProgressLogger(Callback):
    def on_fit_start(self, trainer) -> None:
        cfg = trainer.cfg
        log.info("micro_batch_size %d x accum_steps %d = %d sessions per step, %d micro-batches per epoch",
                 cfg.micro_batch_size, cfg.accum_steps, cfg.effective_batch_size, len(trainer.train_loader))

    def on_optimizer_step(self, trainer, step: int, loss: float) -> None:
        every = trainer.cfg.log_every
        if every and step % every == 0:
            log.info("epoch %d step %4d  loss %.4f  lr %.2e", trainer.epoch, step, loss,
                     trainer.scheduler.get_last_lr()[0])

    def on_epoch_end(self, trainer, epoch: int, val_loss: float) -> None:
        log.info("epoch %d done  val_loss %.5f", epoch, val_loss)


def build_callbacks(names) -> list[Callback]:
    return [CALLBACKS[n]() for n in names]
