"""shelfcast weekly retrain: train the demand model on the regions' exports, score the holdout and run
the backtest audit. Exit status 1 when a region's backtest falls outside the audit band."""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from audit import backtest, failures
from catalog import Catalog, Promotions
from config import Config, override
from dataset import DemandDataset, eval_loader, train_loader
from exports import Sales, load_sales
from features import Standardizer, build_examples
from forecast import SalesHistory, forecast_days
from metrics import wape
from model import build_model
from report import audit_lines, holdout_line
from splits import split_by_day
from timeline import Timeline
from trainer import holdout_scores, predict, train_model
from utils import configure_logging, configure_threads, get_logger, seed_everything

log = get_logger("shelfcast.retrain")
ROOT = Path(__file__).resolve().parent
VERSION = "2.3.1"


@dataclass
class Data:
    timeline: Timeline
    catalog: Catalog
    promos: Promotions
    sales: Sales


def prepare_data(cfg: Config) -> Data:
    data_dir = ROOT / cfg.data_dir
    timeline = Timeline(cfg.start, cfg.days)
    catalog = Catalog(data_dir, timeline, tuple(cfg.regions))
    sales = load_sales(data_dir, tuple(cfg.regions), timeline, catalog.region_of)
    return Data(timeline, catalog, Promotions(data_dir, timeline), sales)


def fit(cfg: Config) -> dict:
    """Train on the window before the holdout; score the holdout rows and backtest the holdout days."""
    configure_threads(cfg.num_threads)
    seed_everything(cfg.seed)
    lags = cfg.lag_days
    data = prepare_data(cfg)
    examples = build_examples(data.sales, data.catalog, data.promos, data.timeline, lags, cfg.roll_window)
    train_ex, holdout_ex = split_by_day(examples, data.timeline, cfg.holdout_days)
    log.info("examples: %d training rows, %d holdout rows", len(train_ex), len(holdout_ex))

    scaler = Standardizer().fit(train_ex.history)
    model = build_model(cfg, len(lags) + 1, len(data.catalog.stores), len(data.catalog.items),
                        base_rate=float(train_ex.units.mean()))
    losses = train_model(model, train_loader(DemandDataset(train_ex, scaler), cfg.batch_size, cfg.seed),
                         cfg.epochs, cfg.lr, cfg.weight_decay, cfg.log_every)

    mu = predict(model, eval_loader(DemandDataset(holdout_ex, scaler), cfg.eval_batch_size))
    regions = holdout_ex.region
    holdout = {"rows": len(holdout_ex), "deviance": holdout_scores(mu, holdout_ex.units),
               "wape": {r: wape(mu[regions == r], holdout_ex.units[regions == r]) for r in sorted(set(regions.tolist()))}}

    first = data.timeline.holdout_start(cfg.holdout_days)
    forecast = forecast_days(model, scaler, data.catalog, data.promos, data.timeline, SalesHistory(data.sales),
                             first, data.timeline.days - 1, lags, cfg.roll_window)
    audit = backtest(forecast, data.sales, data.catalog, first)
    return {"rows": {"train": len(train_ex), "holdout": len(holdout_ex)}, "losses": losses, "holdout": holdout,
            "audit": audit, "model": model}


def parse_args(argv: list[str] | None) -> Config:
    defaults = Config()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--epochs", type=int, default=defaults.epochs)
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE", help="override a config field")
    args = parser.parse_args(argv)
    cfg = Config(seed=args.seed, epochs=args.epochs)
    return override(cfg, args.set)


def main(argv: list[str] | None = None) -> int:
    configure_logging()
    cfg = parse_args(argv)
    log.info("shelfcast %s: weekly retrain, seed %d, regions %s", VERSION, cfg.seed, ",".join(cfg.regions))
    t0 = time.time()
    result = fit(cfg)
    log.info("trained in %.1fs, final train loss %.5f", time.time() - t0, result["losses"][-1])
    log.info(holdout_line(result["holdout"]))
    for line in audit_lines(result["audit"], cfg.audit_band):
        log.info("backtest %s", line)
    bad = failures(result["audit"], cfg.audit_band)
    if bad:
        worst = ", ".join(f"{r} {result['audit'][r]['ratio']:.3f}" for r in bad)
        log.error("backtest audit FAILED: forecast / actual outside 1 +- %.2f: %s", cfg.audit_band, worst)
        return 1
    log.info("backtest audit passed (band 1 +- %.2f)", cfg.audit_band)
    return 0


if __name__ == "__main__":
    sys.exit(main())
