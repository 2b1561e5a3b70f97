"""Trainer callbacks: progress logging, the data audit, history."""

from __future__ import annotations

from typing import Any

from export import Manifest
from logutil import get_logger
from metrics import PassStats

log = get_logger("trainer")
audit_log = get_logger("audit")


class Callback:
    def on_fit_start(self, trainer: Any) -> None: ...

    def on_pass_end(self, trainer: Any, stats: PassStats) -> None: ...

    def on_fit_end(self, trainer: Any) -> None: ...


class ProgressLogger(Callback):
    def __init__(self, every: int = 1) -> None:
        self.every = max(1, every)

    def on_fit_start(self, trainer: Any) -> None:
        cfg = trainer.cfg
        log.info("fit: model=%s params=%d epochs=%d batch_size=%d num_workers=%d lr=%g",
                 cfg.model, sum(p.numel() for p in trainer.model.parameters()), cfg.epochs,
                 cfg.batch_size, cfg.num_workers, cfg.lr)

    def on_pass_end(self, trainer: Any, stats: PassStats) -> None:
        if stats.epoch % self.every == 0 or stats.epoch == trainer.cfg.epochs:
            log.info("pass %d/%d batches %d records %d loss %.4f acc %.4f (%.2fs)", stats.epoch,
                     trainer.cfg.epochs, stats.batches, stats.records,
                     stats.mean_loss(trainer.manifest.num_records), stats.accuracy(), trainer.pass_seconds)


class DataAudit(Callback):
    """Cross-checks every pass against the export's manifest."""

    def __init__(self, manifest: Manifest) -> None:
        self.manifest = manifest
        self.findings: list[str] = []

    def on_pass_end(self, trainer: Any, stats: PassStats) -> None:
        expected = self.manifest.num_records
        repeated = stats.repeated_ids()
        missing = expected - len(stats.ids)
        if stats.records == expected and not repeated and not missing:
            return
        msg = (f"data audit: pass {stats.epoch} read {stats.records} records, the manifest lists "
               f"{expected} ({stats.records / expected:.2f}x); {repeated} record ids read more than "
               f"once, {missing} never read")
        self.findings.append(msg)
        audit_log.warning(msg)


class History(Callback):
    def __init__(self) -> None:
        self.loss: list[float] = []
        self.accuracy: list[float] = []
        self.records: list[int] = []

    def on_pass_end(self, trainer: Any, stats: PassStats) -> None:
        self.loss.append(stats.mean_loss(trainer.manifest.num_records))
        self.accuracy.append(stats.accuracy())
        self.records.append(stats.records)
