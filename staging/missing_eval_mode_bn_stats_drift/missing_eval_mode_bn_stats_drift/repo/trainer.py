"""A minimal epoch-based trainer with callbacks."""

from __future__ import annotations

import logging

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader

from callbacks import Callback
from metrics import MeanMeter

logger = logging.getLogger("churn")


class Trainer:
    def __init__(self, model: nn.Module, optimizer: torch.optim.Optimizer, train_loader: DataLoader,
                 callbacks: list[Callback], epochs: int, scheduler=None, grad_clip: float = 0.0,
                 log_every: int = 0) -> None:
        self.model = model
        self.optimizer = optimizer
        self.train_loader = train_loader
        self.callbacks = callbacks
        self.epochs = epochs
        self.scheduler = scheduler
        self.grad_clip = grad_clip
        self.log_every = log_every
        self.epoch = 0
        self.history: list[dict] = []

    def _emit(self, hook: str, *args) -> None:
        for cb in self.callbacks:
            getattr(cb, hook)(self, *args)

    def train_one_epoch(self) -> float:
        meter = MeanMeter()
        for step, (features, labels) in enumerate(self.train_loader, start=1):
            self.optimizer.zero_grad(set_to_none=True)
            loss = F.cross_entropy(self.model(features), labels)
            loss.backward()
            if self.grad_clip:
                nn.utils.clip_grad_norm_(self.model.parameters(), self.grad_clip)
            self.optimizer.step()
            if self.scheduler is not None:
                self.scheduler.step()
            meter.update(loss.item(), labels.shape[0])
            if self.log_every and step % self.log_every == 0:
                logger.info("epoch %d step %d/%d  loss %.4f", self.epoch, step,
                            len(self.train_loader), loss.item())
        return meter.mean

    def fit(self) -> list[dict]:
        self.model.train()
        self._emit("on_fit_start")
        for epoch in range(1, self.epochs + 1):
            self.epoch = epoch
            self._emit("on_epoch_start", epoch)
            logs = {"epoch": epoch, "train_loss": self.train_one_epoch()}
            self._emit("on_epoch_end", epoch, logs)
            self.history.append(logs)
        self._emit("on_fit_end")
        return self.history
