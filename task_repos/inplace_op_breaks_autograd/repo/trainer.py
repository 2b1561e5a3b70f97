"""The training loop: one Trainer per run, configured by TrainConfig, extended by callbacks."""

from __future__ import annotations

import logging
from typing import Any

import torch
from torch import nn

from callbacks import Callback, History, ProgressLogger
from config import TrainConfig
from datamodule import Loaders, build_loaders
from metrics import RunningMean, correct
from model import build_model
from optim import build_optimizer, build_scheduler
from seeding import seed_everything

logger = logging.getLogger("faults")


class Trainer:
    def __init__(self, cfg: TrainConfig, model: nn.Module, loaders: Loaders,
                 callbacks: list[Callback]) -> None:
        self.cfg = cfg
        self.model = model
        self.loaders = loaders
        self.callbacks = callbacks
        self.criterion = nn.CrossEntropyLoss()
        self.optimizer = build_optimizer(model, cfg)
        self.scheduler = build_scheduler(self.optimizer, cfg, cfg.epochs * len(loaders.train))
        self.epoch = 0

    def _emit(self, event: str, *args: Any) -> None:
        for cb in self.callbacks:
            getattr(cb, event)(self, *args)

    def train_epoch(self) -> float:
        self.model.train()
        meter = RunningMean()
        for step, (features, labels) in enumerate(self.loaders.train, start=1):
            logits = self.model(features)
            loss = self.criterion(logits, labels)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if self.cfg.grad_clip > 0:
                nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.grad_clip)
            self.optimizer.step()
            self.scheduler.step()
            meter.update(loss.item(), len(labels))
            self._emit("on_step_end", step, loss.item())
        return meter.mean

    @torch.no_grad()
    def evaluate(self) -> tuple[float, float]:
        self.model.eval()
        loss, hits = RunningMean(), 0
        for features, labels in self.loaders.val:
            logits = self.model(features)
            loss.update(self.criterion(logits, labels).item(), len(labels))
            hits += correct(logits, labels)
        return loss.mean, hits / self.loaders.num_val

    def run(self) -> None:
        self._emit("on_fit_start")
        for epoch in range(1, self.cfg.epochs + 1):
            self.epoch = epoch
            train_loss = self.train_epoch()
            val_loss, val_acc = self.evaluate()
            self._emit("on_epoch_end", epoch, {"train_loss": train_loss, "val_loss": val_loss,
                                                "val_acc": val_acc})


def fit(cfg: TrainConfig) -> dict[str, Any]:
    """Train one model; returns the per-epoch history and the trained model."""
    seed_everything(cfg.seed, cfg.num_threads)
    loaders = build_loaders(cfg)
    model = build_model(cfg)
    history = History()
    trainer = Trainer(cfg, model, loaders, [ProgressLogger(cfg.log_every), history])
    trainer.run()
    return {"train_loss": history.series("train_loss"), "val_loss": history.series("val_loss"),
            "val_acc": history.series("val_acc"), "model": model}
