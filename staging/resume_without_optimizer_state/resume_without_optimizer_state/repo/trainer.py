"""The training loop: one optimisation step per mini-batch, callbacks, checkpoint/resume."""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from callbacks import Callback, LogProgress, PeriodicCheckpoint
from checkpointing import CheckpointManager
from config import TrainConfig
from data import DemandWindows
from model import build_model
from optim import OptimizerBundle

log = logging.getLogger("forecaster")


@dataclass
class Progress:
    step: int = 0  # optimisation steps completed
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
        torch.manual_seed(cfg.seed)
        self.data = DemandWindows(cfg)
        self.model = build_model(cfg)
        self.optim = OptimizerBundle(cfg, self.model)
        self.progress = Progress()
        self.checkpoints = CheckpointManager(Path(cfg.checkpoint_dir) / cfg.run_name, cfg.keep_last)
        self.callbacks = [LogProgress(cfg.log_every), PeriodicCheckpoint(cfg.ckpt_every), *(callbacks or [])]

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
    def train_step(self, step: int) -> float:
        x, y = self.data.batch(step)
        self.model.train()
        loss = F.mse_loss(self.model(x), y)
        self.optim.zero_grad()
        loss.backward()
        self.optim.step()
        return loss.item()

    @torch.no_grad()
    def holdout_loss(self) -> float:
        self.model.eval()
        x, y = self.data.holdout()
        return F.mse_loss(self.model(x), y).item()

    def fit(self) -> FitResult:
        if self.cfg.resume:
            self.restore()
        else:
            self.checkpoints.clear()
        result = FitResult(start_step=self.progress.step)
        for cb in self.callbacks:
            cb.on_train_start(self)
        while self.progress.step < self.cfg.steps:
            lr = self.optim.lr
            loss = self.train_step(self.progress.step)
            self.progress.step += 1
            self.progress.samples_seen += self.cfg.batch_size
            result.losses.append(loss)
            result.lrs.append(lr)
            for cb in self.callbacks:
                cb.on_step_end(self, loss)
        for cb in self.callbacks:
            cb.on_train_end(self)
        result.holdout_loss = self.holdout_loss()
        result.model = self.model
        return result
