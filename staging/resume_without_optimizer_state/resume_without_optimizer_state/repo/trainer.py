"""The training loop: one optimisation step per mini-batch, callbacks, checkpoint/resume."""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from torch import nn

from callbacks import Callback, build_callbacks
from checkpointing import CheckpointManager
from config import TrainConfig
from dataset import DemandWindows
from loader import build_loader, skip_batches
from losses import LOSSES
from metrics import holdout_loss
from model import build_model
from optim import OptimizerBundle
from seeding import seed_everything

log = logging.getLogger("forecaster")


@dataclass
class Progress:
    step: int = 0  # optimisation steps completed
    epoch: int = 0  # epoch of the last step
    samples_seen: int = 0


@dataclass
class FitResult:
    start_step: int  # where this process started (0, or the resumed checkpoint's step)
    losses: list[float] = field(default_factory=list)  # training loss of each step this process ran
    lrs: list[float] = field(default_factory=list)  # learning rate each of those steps used
    holdout_loss: float = float("nan")
    model: nn.Module | None = None


class Trainer:
    def __init__(self, cfg: TrainConfig, callbacks: list[Callback] | None = None) -> None:
        self.cfg = cfg
        seed_everything(cfg.seed)
        self.dataset = DemandWindows(cfg)
        self.loader = build_loader(self.dataset, cfg)
        self.model = build_model(cfg)
        self.loss_fn = LOSSES.build(cfg.loss)
        self.optim = OptimizerBundle(cfg, self.model)
        self.progress = Progress()
        self.last_grad_norm = float("nan")
        self.checkpoints = CheckpointManager(Path(cfg.checkpoint_dir) / cfg.run_name, cfg.keep_last)
        self.callbacks = [*build_callbacks(cfg), *(callbacks or [])]

    # -- checkpoints --------------------------------------------------------------------------
    def state_dict(self) -> dict:
        return {"model": self.model.state_dict(), "progress": asdict(self.progress)}

    def load_state_dict(self, state: dict) -> None:
        self.model.load_state_dict(state["model"])
        self.progress = Progress(**state["progress"])

    def save_checkpoint(self) -> Path:
        return self.checkpoints.save(self.progress.step, self.state_dict())

    def restore(self) -> bool:
        path = self.checkpoints.latest()
        if path is None:
            log.info("no checkpoint in %s: starting from scratch", self.checkpoints.directory)
            return False
        self.load_state_dict(self.checkpoints.load(path))
        log.info("resumed from %s (step %d)", path, self.progress.step)
        return True

    # -- training -----------------------------------------------------------------------------
    def train_step(self, x: torch.Tensor, y: torch.Tensor) -> float:
        self.model.train()
        loss = self.loss_fn(self.model(x), y)
        self.optim.zero_grad()
        loss.backward()
        self.last_grad_norm = self.optim.step()
        return loss.item()

    def fit(self) -> FitResult:
        if self.cfg.resume:
            self.restore()
        else:
            self.checkpoints.clear()
        result = FitResult(start_step=self.progress.step)
        for cb in self.callbacks:
            cb.on_train_start(self)
        per_epoch = len(self.loader)
        while self.progress.step < self.cfg.steps:
            epoch, offset = divmod(self.progress.step, per_epoch)
            for x, y in skip_batches(self.loader, offset):
                lr = self.optim.lr
                loss = self.train_step(x, y)
                self.progress.step += 1
                self.progress.epoch = epoch
                self.progress.samples_seen += x.shape[0]
                result.losses.append(loss)
                result.lrs.append(lr)
                for cb in self.callbacks:
                    cb.on_step_end(self, loss)
                if self.progress.step >= self.cfg.steps:
                    break
        for cb in self.callbacks:
            cb.on_train_end(self)
        result.holdout_loss = holdout_loss(self.model, self.dataset.holdout(self.cfg.holdout_rows), self.loss_fn)
        result.model = self.model
        return result
