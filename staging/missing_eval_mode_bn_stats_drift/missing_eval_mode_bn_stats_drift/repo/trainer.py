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
                 callbacks: list[Callback], epochs: int, log_every: int = 0) -> None:
        self.model = model
        self.optimizer = optimizer
        self.train_loader = train_loader
        self.callbacks = callbacks
        self.epochs = epochs
        self.log_every = log_every
        self.epoch = 0
        self.history: list[dict] = []

    def train_one_epoch(self) -> float:
        meter = MeanMeter()
        for step, (features, labels) in enumerate(self.train_loader, start=1):
            self.optimizer.zero_grad(set_to_none=True)
            loss = F.cross_entropy(self.model(features), labels)
            loss.backward()
            self.optimizer.step()
            meter.update(loss.item(), labels.shape[0])
            if self.log_every and step % self.log_every == 0:
                logger.info("epoch %d step %d/%d  loss %.4f", self.epoch, step,
                            len(self.train_loader), loss.item())
        return meter.mean

    def fit(self) -> list[dict]:
        self.model.train()
        for cb in self.callbacks:
            cb.on_fit_start(self)
        for epoch in range(1, self.epochs + 1):
            self.epoch = epoch
            logs = {"epoch": epoch, "train_loss": self.train_one_epoch()}
            for cb in self.callbacks:
                cb.on_epoch_end(self, epoch, logs)
            self.history.append(logs)
        for cb in self.callbacks:
            cb.on_fit_end(self)
        return self.history
