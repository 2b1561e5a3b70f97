"""Rolling-origin backtest: for each of the last K days, train on the days before it and score
that day, as the planner would have used the model.

    python scripts/backtest.py                      # last 3 days, 2 members per origin
    python scripts/backtest.py --days-back 5 --set members=3 --set model=glm

Prints one line per origin (deviance, WAPE, bias, 80% interval coverage) and the mean.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from countcast.callbacks import build_callbacks  # noqa: E402
from countcast.config import apply_overrides, compose, preset  # noqa: E402
from countcast.data.dataset import CountDataset  # noqa: E402
from countcast.data.features import Standardizer  # noqa: E402
from countcast.data.splits import member_bag  # noqa: E402
from countcast.data.synthetic import simulate  # noqa: E402
from countcast.evaluation.metrics import planning_metrics  # noqa: E402
from countcast.models.ensemble import RateEnsemble  # noqa: E402
from countcast.training.loop import MemberTrainer  # noqa: E402
from countcast.training.state import TrainingDiverged  # noqa: E402
from countcast.utils.logging import configure, get_logger  # noqa: E402
from countcast.utils.seeding import derive_seed  # noqa: E402

log = get_logger("backtest")


def origin(cfg, table, cards, day: int) -> dict[str, float] | None:
    """Train on days < ``day``, score day ``day``; None if a member diverged."""
    past, target = table.where(table["day"] < day), table.where(table["day"] == day)
    if len(past) == 0 or len(target) == 0:
        return None
    scaler = Standardizer.fit(past)
    past, target = scaler.transform(past), scaler.transform(target)
    models = nn.ModuleList()
    for k in range(cfg.ensemble.members):
        bag = member_bag(past, cfg.ensemble.bag_fraction, derive_seed(cfg.ensemble.seed, "bag", day, k))
        trainer = MemberTrainer(cfg, k, bag, target, cards, build_callbacks(cfg, k, names=("nonfinite_guard",)))
        try:
            _, model = trainer.fit()
        except TrainingDiverged as exc:
            log.warning("origin day %d: %s", day, exc)
            return None
        models.append(model)
    ds = CountDataset(target)
    with torch.no_grad():
        mu = torch.exp(RateEnsemble(models).eval()(ds.cat, ds.num, ds.offset))
    return {"rows": float(len(target)), **planning_metrics(ds.y, mu)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="nightly")
    ap.add_argument("--days-back", type=int, default=3)
    ap.add_argument("--set", action="append", default=[])
    args = ap.parse_args()
    configure()
    job = apply_overrides(preset(args.preset, members=2), args.set)
    job = replace(job, eval_every=0)  # no holdout during a backtest: the origin's day is the test set
    cfg = compose(job)
    table, cards = simulate(cfg.data)
    days = sorted(int(d) for d in table.unique("day"))
    rows = []
    for day in days[-args.days_back:]:
        res = origin(cfg, table, cards.as_dict(), day)
        if res is None:
            print(f"day {day}: diverged")
            continue
        rows.append(res)
        print(f"day {day}: rows {int(res['rows'])}  deviance {res['deviance']:.4f}  wape {res['wape']:.4f}  "
              f"bias {res['bias']:+.3f}  coverage80 {res['coverage80']:.3f}")
    if rows:
        mean = {k: sum(r[k] for r in rows) / len(rows) for k in rows[0]}
        print(f"mean over {len(rows)} origins: deviance {mean['deviance']:.4f}  wape {mean['wape']:.4f}  "
              f"coverage80 {mean['coverage80']:.3f}")
    return 0 if len(rows) == min(args.days_back, len(days)) else 1


if __name__ == "__main__":
    sys.exit(main())
