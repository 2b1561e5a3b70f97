"""Training of one ensemble member."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import torch

from countcast.config.compose import Composed
from countcast.data.augment import build_augment
from countcast.data.dataset import CountDataset
from countcast.data.loaders import train_loader
from countcast.data.schema import NUMERIC, TARGET
from countcast.data.table import Table
from countcast.evaluation.evaluate import evaluate_model
from countcast.losses import build_loss
from countcast.models import build_model
from countcast.optim import build_optimizer, build_schedule
from countcast.training.hooks import CallbackList
from countcast.training.state import LoopContext, StepRecord, TrainState
from countcast.training.step import train_step
from countcast.utils.seeding import derive_seed, generator, seed_everything


@dataclass
class MemberResult:
    member: int
    steps: int
    final_loss: float
    holdout_deviance: float
    monitor: list[float] = field(default_factory=list)
    seconds: float = 0.0


class MemberTrainer:
    def __init__(self, cfg: Composed, member: int, bag: Table, holdout: Table, cardinalities: dict[str, int],
                 callbacks) -> None:
        self.cfg = cfg
        self.member = member
        self.bag = bag
        self.holdout = holdout
        self.cardinalities = cardinalities
        self.callbacks = CallbackList(callbacks)
        self.seed = derive_seed(cfg.ensemble.seed, "member", member)
        self.mean_rate = float(bag[TARGET].mean())

    def fit(self) -> tuple[MemberResult, torch.nn.Module]:
        started = time.perf_counter()
        cfg = self.cfg
        seed_everything(self.seed)
        model = build_model(cfg.model, self.cardinalities, len(NUMERIC), self.mean_rate)
        loader = train_loader(self.bag, cfg.train.batch_size, generator(derive_seed(self.seed, "order")))
        total = len(loader) * cfg.train.epochs
        optimizer = build_optimizer(model, cfg.optim)
        scheduler = build_schedule(optimizer, total, cfg.optim)
        loss_fn = build_loss(cfg.train.loss)
        augment = build_augment(cfg.augment)

        state = TrainState(member=self.member, total_steps=total)
        ctx = LoopContext(state=state, model=model, optimizer=optimizer, holdout=self.holdout, config=cfg)
        self.callbacks.fire("on_fit_start", ctx)
        for epoch in range(cfg.train.epochs):
            state.epoch = epoch
            self.callbacks.fire("on_epoch_start", ctx)
            for batch in loader:
                batch = augment(batch)
                loss, grad_norm, lr = train_step(model, loss_fn, optimizer, scheduler, batch, cfg.optim.grad_clip)
                state.step += 1
                state.record(StepRecord(step=state.step, epoch=epoch, loss=loss, grad_norm=grad_norm, lr=lr))
                self.callbacks.fire("on_step_end", ctx)
                if state.stop:
                    break
            self.callbacks.fire("on_epoch_end", ctx)
            if state.stop:
                break
        self.callbacks.fire("on_fit_end", ctx)

        holdout_dev = evaluate_model(model, CountDataset(self.holdout))["deviance"]
        result = MemberResult(
            member=self.member, steps=state.step,
            final_loss=state.last.loss if state.last else math.nan,
            holdout_deviance=holdout_dev,
            monitor=list(state.metrics.get("holdout_deviance", [])),
            seconds=time.perf_counter() - started,
        )
        return result, model
