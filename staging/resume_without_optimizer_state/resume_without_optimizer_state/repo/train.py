"""Train the demand forecaster.

Usage::

    python train.py                    # train from scratch with the defaults of config.py
    python train.py --resume           # continue from the newest checkpoint of the run
    python train.py --resume-check     # pre-emption drill: interrupted + resumed == uninterrupted?
    python train.py --set arch=resmlp --set lr=0.002   # any TrainConfig field

Workers are pre-emptible: a job that is stopped restarts with ``--resume`` and must end exactly
where an uninterrupted job ends.
"""

from __future__ import annotations

import argparse
import logging
import sys
from dataclasses import replace

from config import TrainConfig
from resume_check import run_resume_check
from trainer import FitResult, Trainer


def fit(cfg: TrainConfig) -> FitResult:
    """Train (or resume, with ``cfg.resume``) one run and return what it did."""
    return Trainer(cfg).fit()


def parse_args(argv: list[str] | None = None) -> tuple[TrainConfig, argparse.Namespace]:
    cfg = TrainConfig()
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=cfg.steps)
    ap.add_argument("--seed", type=int, default=cfg.seed)
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a config field")
    ap.add_argument("--resume-check", action="store_true", help="run the pre-emption drill")
    ap.add_argument("--preempt-at", type=int, default=23, help="drill: step after which the worker stops")
    args = ap.parse_args(argv)
    return replace(cfg.override(args.set), steps=args.steps, seed=args.seed, resume=args.resume), args


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    cfg, args = parse_args()
    if args.resume_check:
        return run_resume_check(cfg, args.preempt_at)
    res = fit(cfg)
    logging.getLogger("forecaster").info("done: steps %d-%d, final loss %.5f, holdout %.5f",
                                         res.start_step, cfg.steps, res.losses[-1] if res.losses else float("nan"),
                                         res.holdout_loss)
    return 0


if __name__ == "__main__":
    sys.exit(main())
