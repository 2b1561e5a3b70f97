"""The training loop: micro-batches with gradient accumulation, AdamW, warm-up schedule."""

from __future__ import annotations

import torch

from callbacks import Callback
from evaluation import evaluate
from loader import SessionLoader
from losses import token_cross_entropy


class Trainer:
    def __init__(self, cfg, model: torch.nn.Module, optimizer: torch.optim.Optimizer, scheduler,
                 train_loader: SessionLoader, val_loader: SessionLoader,
                 callbacks: list[Callback] | None = None) -> None:
        self.cfg = cfg
        self.model = model
        self.optimizer = optimizer
        self.scheduler = scheduler
        self.train_loader = train_loader
        self.val_loader = val_loader
        self.callbacks = callbacks or []
        self.loss_fn = token_cross_entropy
        self.global_step = 0
        self.epoch = 0

    def _emit(self, hook: str, *args) -> None:
        for cb in self.callbacks:
            getattr(cb, hook)(self, *args)

    def optimizer_step(self, loss: float) -> None:
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.global_step += 1
        self._emit("on_optimizer_step", self.global_step, loss)

    def train_epoch(self) -> None:
        cfg = self.cfg
        self.model.train()
        window_loss = 0.0
        for i, batch in enumerate(self.train_loader.epoch(self.epoch)):
            logits = self.model(batch.input_ids)
            loss = self.loss_fn(logits, batch.labels) / cfg.accum_steps
            loss.backward()
            window_loss += loss.item()
            if (i + 1) % cfg.accum_steps == 0:
                self.optimizer_step(window_loss)
                window_loss = 0.0

    def fit(self) -> list[float]:
        """Trains for cfg.epochs; returns the validation loss after every epoch."""
        self.optimizer.zero_grad(set_to_none=True)
        self._emit("on_fit_start")
        history = []
        for epoch in range(1, self.cfg.epochs + 1):
            self.epoch = epoch
            self.train_epoch()
            val_loss = evaluate(self.model, self.val_loader)
            history.append(val_loss)
            self._emit("on_epoch_end", epoch, val_loss)
        return history
