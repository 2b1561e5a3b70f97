"""The training loop: DDP over the ranks, the global-mean objective, callbacks."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch.nn.parallel import DistributedDataParallel as DDP

from callbacks import Callback
from config import TrainConfig
from data import Batch, TelemetryDataModule
from evaluation import validate
from losses import GlobalMeanLoss
from metrics import EpochMeter
from optim import build_optimizer


@dataclass
class FitResult:
    history: list[dict[str, float]] = field(default_factory=list)
    model: torch.nn.Module | None = None


class Trainer:
    def __init__(self, cfg: TrainConfig, model: torch.nn.Module, data: TelemetryDataModule,
                 callbacks: list[Callback]) -> None:
        self.cfg, self.model, self.data, self.callbacks = cfg, model, data, callbacks
        self.rank = data.rank
        self.net = DDP(model)
        self.loss_fn = GlobalMeanLoss(cfg.huber_delta)
        self.optimizer, self.scheduler = build_optimizer(self.net, cfg)
        self.train_loader = data.train_loader()
        self.val_loader = data.val_loader()
        self.epoch = 0

    def train_step(self, batch: Batch) -> tuple[float, float]:
        self.optimizer.zero_grad(set_to_none=True)
        out = self.loss_fn(self.net(batch.x), batch.y, batch.weight)
        out.loss.backward()
        self.optimizer.step()
        return out.loss_sum, out.labelled

    def run_epoch(self, meter: EpochMeter) -> None:
        for step, batch in enumerate(self.train_loader):
            loss_sum, labelled = self.train_step(batch)
            meter.update(loss_sum, labelled)
            for cb in self.callbacks:
                cb.on_step_end(self, step, loss_sum / max(labelled, 1.0))

    def fit(self) -> FitResult:
        self.net.train()
        for cb in self.callbacks:
            cb.on_fit_start(self)
        history = []
        for epoch in range(self.cfg.epochs):
            self.epoch = epoch
            self.train_loader.set_epoch(epoch)
            meter = EpochMeter()
            self.run_epoch(meter)
            train = meter.reduce()
            val = validate(self.model, self.val_loader, self.cfg.huber_delta)
            record = {"epoch": epoch + 1, "train_loss": train["loss"], "labelled": train["labelled"],
                      "val_loss": val["loss"], "lr": self.scheduler.get_last_lr()[0]}
            history.append(record)
            for cb in self.callbacks:
                cb.on_epoch_end(self, epoch, record)
            self.scheduler.step()
        return FitResult(history, self.model)
