"""The training loop: epochs over mini-batches, validation, callbacks, full-state checkpoints."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

import models  # noqa: F401  (registers the architectures)
import schedules  # noqa: F401  (registers the LR schedules)
import seeding
from callbacks import BestCheckpoint, EarlyStopping, EpochLogger, PeriodicCheckpoint
from data import Split, Standardizer
from loader import BatchLoader
from metrics import History, confusion, summarize
from optim import build_optimizer
from registry import MODELS, SCHEDULES

log = logging.getLogger("inspect.trainer")


class Trainer:
    def __init__(self, cfg, train: Split, val: Split) -> None:
        self.cfg = cfg
        self.train_split, self.val_split = train, val
        self.model = MODELS.build(cfg.arch, cfg)
        self.optimizer = build_optimizer(self.model, cfg.lr, cfg.weight_decay)
        steps_per_epoch = (cfg.n_train + cfg.batch_size - 1) // cfg.batch_size
        self.scheduler = SCHEDULES.build("warmup_cosine", self.optimizer, cfg.warmup_epochs * steps_per_epoch,
                                         cfg.epochs * steps_per_epoch)
        self.normalizer = Standardizer().fit(train.x)
        self.history = History()
        self.callbacks = [BestCheckpoint(cfg.monitor, cfg.restore_best), EarlyStopping(cfg.monitor, cfg.patience),
                          EpochLogger(), PeriodicCheckpoint()]
        self.run_dir = Path(cfg.ckpt_dir)
        self.epoch = 0
        self.global_step = 0
        self.should_stop = False

    # -- checkpoint state ---------------------------------------------------------------------
    def state_dict(self) -> dict:
        return {
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "epoch": self.epoch,
            "global_step": self.global_step,
            "history": self.history.state_dict(),
            "callbacks": {cb.name: cb.state_dict() for cb in self.callbacks},
            "normalizer": self.normalizer.state_dict(),
            "rng": seeding.rng_state(),
            "config": dataclasses.asdict(self.cfg),
            "run_dir": self.run_dir,
        }

    def load_state_dict(self, state: dict) -> None:
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.epoch, self.global_step = state["epoch"], state["global_step"]
        self.history.load_state_dict(state["history"])
        for cb in self.callbacks:
            cb.load_state_dict(state["callbacks"].get(cb.name, {}) or cb.state_dict())
        self.normalizer.load_state_dict(state["normalizer"])
        seeding.set_rng_state(state["rng"])
        log.info("resumed at epoch %d (step %d) of a run in %s", self.epoch, self.global_step, state["run_dir"])

    # -- loop ---------------------------------------------------------------------------------
    def evaluate(self) -> dict:
        self.model.eval()
        with torch.no_grad():
            logits = self.model(torch.from_numpy(self.normalizer(self.val_split.x)))
        pred = logits.argmax(dim=1).numpy()
        return summarize(confusion(pred, self.val_split.y, self.cfg.n_classes))

    def train_epoch(self, loader: BatchLoader) -> float:
        self.model.train()
        losses = []
        for xb, yb in loader:
            loss = F.cross_entropy(self.model(xb), yb, label_smoothing=self.cfg.label_smoothing)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
            self.scheduler.step()
            self.global_step += 1
            losses.append(loss.item())
        return np.mean(losses)

    def fit(self) -> History:
        cfg = self.cfg
        loader = BatchLoader(self.normalizer(self.train_split.x), self.train_split.y, cfg.batch_size,
                             shuffle=True, noise_std=cfg.noise_std)
        while self.epoch < cfg.epochs and not self.should_stop:
            train_loss = self.train_epoch(loader)
            metrics = self.evaluate()
            self.epoch += 1
            self.history.append(self.epoch, train_loss=train_loss, **metrics)
            for cb in self.callbacks:
                cb.on_epoch_end(self, metrics)
        for cb in self.callbacks:
            cb.on_train_end(self)
        return self.history
