"""The training loop."""

from __future__ import annotations

import torch

from callbacks import Callback
from config import TrainConfig
from data import Split, batches
from evaluation import evaluate
from wrappers import wrap_for_training


class Trainer:
    def __init__(self, cfg: TrainConfig, model: torch.nn.Module, callbacks: list[Callback]) -> None:
        self.cfg = cfg
        self.model = model
        self.net = wrap_for_training(model, cfg)
        self.callbacks = callbacks
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        self.step = 0
        self.epoch = 0
        self.history: list[dict[str, float]] = []

    def train_epoch(self, train: Split, generator: torch.Generator) -> None:
        self.net.train()
        for x, y in batches(train, self.cfg.batch_size, generator, drop_last=True):
            loss, _ = self.net(x, y)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
            self.step += 1
            for cb in self.callbacks:
                cb.on_step_end(self, loss.item())

    def fit(self, train: Split, val: Split) -> list[dict[str, float]]:
        self.model.feature_module.scaler.fit(train.x)
        generator = torch.Generator().manual_seed(self.cfg.seed)
        for self.epoch in range(1, self.cfg.epochs + 1):
            self.train_epoch(train, generator)
            metrics = evaluate(self.model, val)
            self.history.append(metrics)
            for cb in self.callbacks:
                cb.on_validation_end(self, metrics)
        return self.history
