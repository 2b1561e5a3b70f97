"""The training loop: DDP over the ranks, AdamW with warm-up, validation every epoch, resumable."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

from callbacks import CallbackList
from checkpointing import load_checkpoint
from config import TrainConfig
from datamodule import TicketDataModule
from distributed import sum_over_ranks
from models import build_model
from schedules import linear_warmup


@dataclass
class TrainState:
    epoch: int = 0  # epochs completed
    global_step: int = 0


class Trainer:
    def __init__(self, cfg: TrainConfig, data: TicketDataModule, rank: int, world_size: int,
                 callbacks: CallbackList) -> None:
        self.cfg, self.data, self.rank, self.world_size = cfg, data, rank, world_size
        self.callbacks = callbacks
        self.state = TrainState()
        self.history: list[dict] = []
        self.model = build_model(cfg)
        self.net = DDP(self.model)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        self.scheduler = linear_warmup(self.optimizer, cfg.warmup_steps)
        self.train_loader = data.train_dataloader(start_epoch=self.state.epoch)
        self.val_loader = data.val_dataloader()

    # -- resuming ----------------------------------------------------------------------------
    def restore(self, path: str) -> None:
        ckpt = load_checkpoint(path)
        self.model.load_state_dict(ckpt["model"])
        self.optimizer.load_state_dict(ckpt["optimizer"])
        self.scheduler.load_state_dict(ckpt["scheduler"])
        self.state = TrainState(**ckpt["state"])
        self.history = list(ckpt["history"])

    # -- the loop ----------------------------------------------------------------------------
    def train_step(self, batch: dict) -> torch.Tensor:
        logits = self.net(batch["tokens"], batch["lengths"])
        loss = F.cross_entropy(logits, batch["labels"])
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        self.scheduler.step()
        self.state.global_step += 1
        return loss.detach()

    @torch.no_grad()
    def evaluate(self) -> dict[str, float]:
        self.model.eval()
        total = correct = 0
        loss_sum = 0.0
        for batch in self.val_loader:
            logits = self.model(batch["tokens"], batch["lengths"])
            loss_sum += F.cross_entropy(logits, batch["labels"], reduction="sum").item()
            correct += int((logits.argmax(1) == batch["labels"]).sum())
            total += len(batch["labels"])
        self.model.train()
        return {"val_loss": loss_sum / total, "val_acc": correct / total}

    def fit(self) -> list[dict]:
        cfg = self.cfg
        if cfg.resume_from:
            self.restore(cfg.resume_from)
        self.callbacks.fire("on_fit_start", self)
        self.net.train()
        for epoch in range(self.state.epoch, cfg.epochs):
            self.callbacks.fire("on_epoch_start", self)
            sums = torch.zeros(2, dtype=torch.float64)
            for batch in self.train_loader:
                self.callbacks.fire("on_batch_start", self, batch)
                loss = self.train_step(batch)
                n = len(batch["labels"])
                sums += torch.tensor([loss.item() * n, n], dtype=torch.float64)
                self.callbacks.fire("on_step_end", self, loss.item())
            sums = sum_over_ranks(sums)
            self.state.epoch = epoch + 1
            record = {"epoch": epoch + 1, "train_loss": (sums[0] / sums[1]).item(), **self.evaluate()}
            self.history.append(record)
            self.callbacks.fire("on_epoch_end", self, record)
        return self.history
