"""The training loop."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from callbacks import Callback
from compile_utils import compile_model
from config import TrainConfig
from datamodule import SessionDataModule
from evaluation import evaluate
from metrics import Mean


class Trainer:
    def __init__(self, cfg: TrainConfig, model: torch.nn.Module, callbacks: list[Callback]) -> None:
        self.cfg = cfg
        self.model = model
        self.net = compile_model(model, cfg)
        self.callbacks = callbacks
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        self.step = 0
        self.epoch = 0
        self.history: list[dict[str, float]] = []

    def train_epoch(self, data: SessionDataModule) -> float:
        self.net.train()
        running = Mean()
        for batch in data.train_loader(self.epoch):
            logits = self.net(batch.events, batch.mask)
            loss = F.cross_entropy(logits, batch.labels)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
            self.step += 1
            running.update(loss.item(), len(batch))
            for cb in self.callbacks:
                cb.on_step_end(self, loss.item())
        return running.compute()

    def fit(self, data: SessionDataModule) -> list[dict[str, float]]:
        for cb in self.callbacks:
            cb.on_fit_start(self)
        for self.epoch in range(1, self.cfg.epochs + 1):
            train_loss = self.train_epoch(data)
            metrics = evaluate(self.net, data.val_loader())
            self.history.append({"train_loss": train_loss, **metrics})
            for cb in self.callbacks:
                cb.on_validation_end(self, metrics)
        for cb in self.callbacks:
            cb.on_fit_end(self)
        return self.history
