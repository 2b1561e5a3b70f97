"""The nightly bagged ensemble: data once, then one member after another (fail fast)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from countcast.callbacks import build_callbacks
from countcast.config.compose import Composed
from countcast.data.dataset import CountDataset
from countcast.data.features import Standardizer
from countcast.data.splits import holdout_split, member_bag
from countcast.data.synthetic import simulate
from countcast.data.validation import validate_table
from countcast.evaluation.evaluate import evaluate_ensemble
from countcast.training.loop import MemberResult, MemberTrainer
from countcast.utils.logging import get_logger
from countcast.utils.seeding import derive_seed
from countcast.utils.runtime import Stopwatch

log = get_logger("ensemble")


@dataclass
class EnsembleResult:
    members: list[MemberResult]
    holdout_deviance: float
    models: nn.ModuleList
    scaler: dict
    cardinalities: dict
    mean_rates: list
    timings: str = ""


def prepare_data(cfg: Composed):
    table, cards = simulate(cfg.data)
    validate_table(table, cards.as_dict())
    train, holdout = holdout_split(table, cfg.data.holdout_fraction, cfg.data.data_seed)
    scaler = Standardizer.fit(train)
    return scaler.transform(train), scaler.transform(holdout), cards.as_dict(), scaler


def train_ensemble(cfg: Composed) -> EnsembleResult:
    watch = Stopwatch()
    with watch.section("data"):
        train, holdout, cards, scaler = prepare_data(cfg)
    log.info("data: %d training rows, %d holdout rows, %d stores x %d items", len(train), len(holdout),
             cards["store"], cards["item"])
    results: list[MemberResult] = []
    models = nn.ModuleList()
    mean_rates: list[float] = []
    for k in range(cfg.ensemble.members):
        bag = member_bag(train, cfg.ensemble.bag_fraction, derive_seed(cfg.ensemble.seed, "bag", k))
        trainer = MemberTrainer(cfg, k, bag, holdout, cards, build_callbacks(cfg, k))
        with watch.section("members"):
            result, model = trainer.fit()
        mean_rates.append(trainer.mean_rate)
        log.info("member %d: %d steps, final loss %.5f, holdout deviance %.5f (%.1fs)", k, result.steps,
                 result.final_loss, result.holdout_deviance, result.seconds)
        results.append(result)
        models.append(model)
    with torch.no_grad(), watch.section("scoring"):
        ens = evaluate_ensemble(list(models), CountDataset(holdout))["deviance"]
    log.info("ensemble: holdout deviance %.5f", ens)
    return EnsembleResult(members=results, holdout_deviance=ens, models=models, scaler=scaler.state(),
                          cardinalities=cards, mean_rates=mean_rates, timings=watch.summary())
