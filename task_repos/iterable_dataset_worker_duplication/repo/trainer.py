"""Full-batch trainer: the gradient of the mean loss over the whole export, one step per pass.

The loader only chunks the export into batches; gradients of every batch are accumulated and
the optimizer steps once the pass is complete, so the fit does not depend on the order the
records arrive in.
"""

from __future__ import annotations

import time

import torch
import torch.nn.functional as F

from callbacks import Callback
from config import Config
from datamodule import ExportDataModule
from metrics import PassStats


class Trainer:
    def __init__(self, cfg: Config, model: torch.nn.Module, data: ExportDataModule,
                 callbacks: list[Callback]) -> None:
        self.cfg = cfg
        self.model = model
        self.data = data
        self.callbacks = callbacks
        self.pass_seconds = 0.0
        self.optimizer = torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=cfg.momentum,
                                         weight_decay=cfg.weight_decay)

    @property
    def manifest(self):
        return self.data.manifest

    def _emit(self, hook: str, *args) -> None:
        for cb in self.callbacks:
            getattr(cb, hook)(self, *args)

    def run_pass(self, epoch: int) -> PassStats:
        stats = PassStats(epoch)
        denominator = self.manifest.num_records
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        for batch in self.data.train_loader():
            logits = self.model(batch["features"])
            loss_sum = F.binary_cross_entropy_with_logits(logits, batch["label"], reduction="sum")
            (loss_sum / denominator).backward()
            stats.update(batch, logits.detach(), loss_sum.detach())
        self.optimizer.step()
        return stats

    def fit(self) -> list[PassStats]:
        self._emit("on_fit_start")
        passes = []
        for epoch in range(1, self.cfg.epochs + 1):
            start = time.perf_counter()
            stats = self.run_pass(epoch)
            self.pass_seconds = time.perf_counter() - start
            passes.append(stats)
            self._emit("on_pass_end", stats)
        self._emit("on_fit_end")
        return passes
