"""Trainer callbacks: loss logging and the data audit of the augmentation pipeline."""

from __future__ import annotations

import hashlib
from collections import Counter

import torch

from utils import get_logger

log = get_logger()


class Callback:
    def on_fit_start(self, trainer) -> None: ...
    def on_epoch_start(self, trainer, epoch: int) -> None: ...
    def on_batch_end(self, trainer, epoch: int, step: int, batch: dict, loss: float) -> None: ...
    def on_epoch_end(self, trainer, epoch: int, train_loss: float, val_loss: float) -> None: ...
    def on_fit_end(self, trainer) -> None: ...


class LossLogger(Callback):
    def __init__(self, every: int) -> None:
        self.every = every

    def on_batch_end(self, trainer, epoch, step, batch, loss) -> None:
        if self.every and (step + 1) % self.every == 0:
            log.info("epoch %d step %3d/%d  loss %.4f", epoch, step + 1, trainer.steps_per_epoch, loss)

    def on_epoch_end(self, trainer, epoch, train_loss, val_loss) -> None:
        log.info("epoch %d done  train %.4f  val %.4f", epoch, train_loss, val_loss)


def mask_fingerprint(mask: torch.Tensor) -> str:
    return hashlib.blake2b(mask.to(torch.uint8).numpy().tobytes(), digest_size=6).hexdigest()


class AugmentationAudit(Callback):
    """Data audit: fingerprints the mask every training sample got, to see how varied the
    augmentation is (distinct masks per epoch and over the run)."""

    def __init__(self, show_batches: int = 6) -> None:
        self.show_batches = show_batches
        self.seen: Counter[str] = Counter()
        self.epoch_prints: set[str] = set()
        self.batch_prints: list[str] = []
        self.samples = 0
        self.repeated = 0

    def on_epoch_start(self, trainer, epoch) -> None:
        self.epoch_prints, self.batch_prints, self.epoch_samples, self.repeated = set(), [], 0, 0

    def on_batch_end(self, trainer, epoch, step, batch, loss) -> None:
        prints = [mask_fingerprint(m) for m in batch["mask"]]
        self.batch_prints.append(hashlib.blake2b("".join(prints).encode(), digest_size=2).hexdigest())
        self.repeated += sum(p in self.seen for p in prints)
        self.epoch_prints.update(prints)
        self.epoch_samples += len(prints)

    def on_epoch_end(self, trainer, epoch, train_loss, val_loss) -> None:
        log.info("aug audit epoch %d: %d samples, %d distinct masks, %d masks seen in earlier epochs; "
                 "first batches %s", epoch, self.epoch_samples, len(self.epoch_prints), self.repeated,
                 " ".join(self.batch_prints[: self.show_batches]))
        self.seen.update(self.epoch_prints)
        self.samples += self.epoch_samples

    @property
    def diversity(self) -> float:
        return len(self.seen) / max(1, self.samples)

    def on_fit_end(self, trainer) -> None:
        log.info("aug audit: mask diversity %.3f (%d distinct masks / %d samples over %d epochs)",
                 self.diversity, len(self.seen), self.samples, trainer.cfg.epochs)
