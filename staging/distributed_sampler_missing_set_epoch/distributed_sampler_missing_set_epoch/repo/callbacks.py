"""Trainer callbacks: progress logging, the data-order audit, the resumable checkpoint."""

from __future__ import annotations

import hashlib
from pathlib import Path

from checkpointing import save_checkpoint
from config import TrainConfig
from distributed import barrier
from logutil import get_logger
from registry import CALLBACKS

log = get_logger("train")
audit_log = get_logger("audit")


class Callback:
    def on_fit_start(self, trainer) -> None:
        pass

    def on_epoch_start(self, trainer) -> None:
        pass

    def on_batch_start(self, trainer, batch: dict) -> None:
        pass

    def on_step_end(self, trainer, loss: float) -> None:
        pass

    def on_epoch_end(self, trainer, record: dict) -> None:
        pass


class CallbackList:
    def __init__(self, callbacks: list[Callback]) -> None:
        self.callbacks = callbacks

    def fire(self, hook: str, *args) -> None:
        for cb in self.callbacks:
            getattr(cb, hook)(*args)


@CALLBACKS.register("progress")
class LogProgress(Callback):
    def __init__(self, cfg: TrainConfig) -> None:
        self.every = cfg.log_every

    def on_fit_start(self, trainer) -> None:
        if trainer.state.epoch:
            log.info("resumed from %s: %d epoch(s) done, step %d", trainer.cfg.resume_from,
                     trainer.state.epoch, trainer.state.global_step)

    def on_step_end(self, trainer, loss: float) -> None:
        if self.every and trainer.state.global_step % self.every == 0:
            log.info("step %d loss %.4f lr %.2e", trainer.state.global_step, loss, trainer.scheduler.get_last_lr()[0])

    def on_epoch_end(self, trainer, record: dict) -> None:
        log.info("epoch %d/%d train_loss %.6f val_loss %.6f val_acc %.4f", record["epoch"], trainer.cfg.epochs,
                 record["train_loss"], record["val_loss"], record["val_acc"])


@CALLBACKS.register("data_audit")
class DataAudit(Callback):
    """Per epoch, what this rank trained on: ticket count, an order digest (comparable across
    runs) and how much of the order repeats the previous epoch's."""

    def __init__(self, cfg: TrainConfig) -> None:
        self.batches: list[list[int]] = []
        self.previous: list[list[int]] | None = None

    def on_epoch_start(self, trainer) -> None:
        self.batches = []

    def on_batch_start(self, trainer, batch: dict) -> None:
        self.batches.append(batch["ids"].tolist())

    def on_epoch_end(self, trainer, record: dict) -> None:
        order = [i for b in self.batches for i in b]
        digest = hashlib.sha1(",".join(map(str, order)).encode()).hexdigest()[:10]
        line = (f"data audit: epoch {record['epoch']} rank {trainer.rank}: {len(order)} tickets in "
                f"{len(self.batches)} batches, order digest {digest}")
        if self.previous is not None:
            prev = [i for b in self.previous for i in b]
            same = sum(1 for a, b in zip(order, prev) if a == b)
            repeated = len({tuple(b) for b in self.batches} & {tuple(b) for b in self.previous})
            line += (f"; {same}/{len(order)} at the same position as in epoch {record['epoch'] - 1}, "
                     f"{repeated}/{len(self.batches)} batches repeated")
        audit_log.info(line)
        self.previous = self.batches


@CALLBACKS.register("last_checkpoint")
class LastCheckpoint(Callback):
    """Writes out_dir/last.pt after every epoch (rank 0); a later run continues with --resume."""

    def __init__(self, cfg: TrainConfig) -> None:
        self.path = Path(cfg.out_dir) / "last.pt"

    def on_epoch_end(self, trainer, record: dict) -> None:
        if trainer.rank == 0:
            save_checkpoint(self.path, trainer)
        barrier()


def build_callbacks(cfg: TrainConfig) -> CallbackList:
    return CallbackList([CALLBACKS.get(name)(cfg) for name in cfg.callbacks])
