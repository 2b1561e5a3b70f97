"""Nightly scorecard fit: export -> shard stream -> full-batch fit -> summary.

    python train.py            # the nightly job with the defaults of config.py
"""

from __future__ import annotations

import time

from callbacks import DataAudit, History, ProgressLogger
from config import Config
from datamodule import ExportDataModule
from logutil import get_logger, setup_logging
from model import build_model
from seeding import seed_everything
from trainer import Trainer

log = get_logger("job")


def fit(cfg: Config) -> dict:
    seed_everything(cfg.seed)
    data = ExportDataModule(cfg)
    manifest = data.prepare()
    model = build_model(cfg.model, cfg.num_features, cfg.hidden_dim)
    history = History()
    audit = DataAudit(manifest)
    trainer = Trainer(cfg, model, data, [ProgressLogger(cfg.log_every), audit, history])
    trainer.fit()
    return {"model": model, "loss": history.loss, "accuracy": history.accuracy,
            "records": history.records, "audit_findings": len(audit.findings)}


def main() -> None:
    setup_logging()
    cfg = Config()
    start = time.perf_counter()
    result = fit(cfg)
    log.info("done in %.1fs: final loss %.4f acc %.4f, %d records read in the last pass",
             time.perf_counter() - start, result["loss"][-1], result["accuracy"][-1], result["records"][-1])


if __name__ == "__main__":
    main()
