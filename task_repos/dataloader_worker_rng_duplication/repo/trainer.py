"""The training loop: one Trainer per run, driven by callbacks."""

from __future__ import annotations

import time

import torch
from torch import nn

from callbacks import AugmentationAudit, Callback, LossLogger
from config import TrainConfig
from datamodule import SensorDataModule
from losses import masked_mse
from model import build_model
from utils import get_logger, seed_everything

log = get_logger()


class Trainer:
    def __init__(self, cfg: TrainConfig, model: nn.Module, data: SensorDataModule,
                 callbacks: list[Callback]) -> None:
        self.cfg = cfg
        self.model = model
        self.data = data
        self.callbacks = callbacks
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        self.steps_per_epoch = 0

    def _emit(self, hook: str, *args) -> None:
        for cb in self.callbacks:
            getattr(cb, hook)(self, *args)

    def train_epoch(self, epoch: int) -> tuple[float, int]:
        self.model.train()
        loader = self.data.train_loader()
        self.steps_per_epoch = len(loader)
        total, samples = 0.0, 0
        for step, batch in enumerate(loader):
            pred = self.model(batch["values"], batch["mask"])
            loss = masked_mse(pred, batch["target"], batch["mask"])
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
            n = batch["values"].shape[0]
            total += loss.item() * n
            samples += n
            self._emit("on_batch_end", epoch, step, batch, loss.item())
        return total / max(1, samples), samples

    @torch.no_grad()
    def validate(self) -> float:
        self.model.eval()
        total, samples = 0.0, 0
        for batch in self.data.val_loader():
            pred = self.model(batch["values"], batch["mask"])
            n = batch["values"].shape[0]
            total += masked_mse(pred, batch["target"], batch["mask"]).item() * n
            samples += n
        return total / max(1, samples)

    def fit(self) -> dict:
        history = {"train_loss": [], "val_loss": [], "samples": []}
        self._emit("on_fit_start")
        for epoch in range(1, self.cfg.epochs + 1):
            self._emit("on_epoch_start", epoch)
            train_loss, samples = self.train_epoch(epoch)
            val_loss = self.validate()
            history["train_loss"].append(train_loss)
            history["val_loss"].append(val_loss)
            history["samples"].append(samples)
            self._emit("on_epoch_end", epoch, train_loss, val_loss)
        self._emit("on_fit_end")
        return history


def fit(cfg: TrainConfig) -> dict:
    """Train one model with ``cfg``; returns the per-epoch history and the data audit."""
    seed_everything(cfg.seed)
    data = SensorDataModule(cfg)
    data.setup()
    model = build_model(cfg)
    audit = AugmentationAudit()
    trainer = Trainer(cfg, model, data, [LossLogger(cfg.log_every), audit])
    log.info("train windows %d (%d per batch, %d workers), val windows %d, params %d",
             len(data.train_set), cfg.batch_size, cfg.num_workers, len(data.val_set),
             sum(p.numel() for p in model.parameters()))
    start = time.perf_counter()
    history = trainer.fit()
    log.info("finished %d epochs in %.1fs, final val %.4f", cfg.epochs, time.perf_counter() - start,
             history["val_loss"][-1])
    return {**history, "mask_diversity": audit.diversity}
