"""The training loop: one process per rank, the model wrapped for data parallelism."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.utils.data import DistributedSampler

import distributed
from callbacks import build_callbacks
from config import TrainConfig
from data import WindowData


class Trainer:
    def __init__(self, cfg: TrainConfig, model: torch.nn.Module, data: WindowData) -> None:
        self.cfg = cfg
        self.data = data
        self.model = distributed.wrap(model)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=cfg.lr, momentum=cfg.momentum,
                                         weight_decay=cfg.weight_decay)
        self.callbacks = build_callbacks(cfg)
        self.step = 0
        self.epoch = 0
        self.train_loss = float("nan")
        self.metrics: dict[str, float] = {}
        self.history: dict[str, list[float]] = {"train_loss": [], "val_loss": [], "val_acc": [], "lr": []}

    @property
    def lr(self) -> float:
        return self.optimizer.param_groups[0]["lr"]

    def train_epoch(self, loader) -> float:
        self.model.train()
        total, count = 0.0, 0
        for x, y in loader:
            loss = F.cross_entropy(self.model(x), y)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
            self.step += 1
            total += loss.item() * len(y)
            count += len(y)
            for cb in self.callbacks:
                cb.on_step_end(self, loss.item())
        return total / max(count, 1)

    def fit(self) -> dict[str, list[float]]:
        loader = self.data.train_loader()
        for cb in self.callbacks:
            cb.on_fit_start(self)
        for self.epoch in range(1, self.cfg.epochs + 1):
            if isinstance(loader.sampler, DistributedSampler):
                loader.sampler.set_epoch(self.epoch)
            self.history["lr"].append(self.lr)
            self.train_loss = self.train_epoch(loader)
            for cb in self.callbacks:
                cb.on_epoch_end(self)
            self.history["train_loss"].append(self.train_loss)
            self.history["val_loss"].append(self.metrics["val_loss"])
            self.history["val_acc"].append(self.metrics["val_acc"])
        distributed.check_replicas(distributed.unwrap(self.model))
        return self.history
