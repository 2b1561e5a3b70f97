"""Nightly training of the demand ensemble.

Usage::

    python train.py                        # the nightly job (preset "nightly"), then the regression gate
    python train.py --preset smoke         # CI smoke test
    python train.py --seed 20261130        # another night
    python train.py --set thin_prob=0.2 --set members=3   # any JobConfig field
    python train.py --export out/ensemble.pt --report     # write the export, print calibration

Exit status: 0 when every member trained and the gate passed (or has no baseline for the
config), 1 when a member diverged or the gate found a mismatch.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

from countcast.config import JobConfig, apply_overrides, compose, preset
from countcast.evaluation.gate import check_against_baseline
from countcast.training.ensemble import EnsembleResult, train_ensemble
from countcast.training.state import TrainingDiverged
from countcast.utils.logging import configure, get_logger
from countcast.version import __version__

BASELINES = Path(__file__).resolve().parent / "baselines" / "nightly.json"
log = get_logger("nightly")


def summarize(res: EnsembleResult) -> dict:
    return {
        "members": [{"steps": m.steps, "final_loss": m.final_loss, "holdout_deviance": m.holdout_deviance,
                     "monitor": m.monitor} for m in res.members],
        "holdout_deviance": res.holdout_deviance,
        "models": res.models,
    }


def fit(cfg: JobConfig) -> dict:
    """Train the ensemble of ``cfg``; raises TrainingDiverged if a member diverges."""
    return summarize(train_ensemble(compose(cfg)))


def parse_args(argv=None) -> tuple[JobConfig, argparse.Namespace]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="nightly")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--export", type=Path, default=None, help="write the ensemble export here")
    ap.add_argument("--report", action="store_true", help="print the member table and calibration deciles")
    args = ap.parse_args(argv)
    cfg = apply_overrides(preset(args.preset), args.set)
    if args.seed is not None:
        cfg = replace(cfg, seed=args.seed)
    return cfg, args


def main(argv=None) -> int:
    configure()
    cfg, args = parse_args(argv)
    log.info("countcast %s: nightly ensemble, seed %d, %d members", __version__, cfg.seed, cfg.members)
    start = time.perf_counter()
    try:
        res = train_ensemble(compose(cfg))
    except TrainingDiverged as exc:
        log.error("nightly ensemble FAILED: %s", exc)
        return 1
    log.info("trained %d members in %.1fs (%s)", len(res.members), time.perf_counter() - start, res.timings)
    if args.report:
        from countcast.reporting import print_report
        print_report(cfg, res)
    if args.export is not None:
        from countcast.inference.export import export_ensemble
        path = export_ensemble(args.export, cfg.to_dict(), res.cardinalities, res.scaler, res.models, res.mean_rates)
        log.info("export written: %s", path)
    gate = check_against_baseline(cfg.to_dict(), [m.holdout_deviance for m in res.members],
                                  res.holdout_deviance, BASELINES)
    for line in gate.lines:
        log.info("gate: %s", line)
    if not gate.passed:
        log.error("regression gate FAILED: the ensemble does not reproduce the baseline of this config")
        return 1
    log.info("nightly ensemble OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
