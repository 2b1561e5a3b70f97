"""The ``--report`` output of the nightly job: member table and the ensemble's calibration."""

from __future__ import annotations

import torch

from countcast.config import compose
from countcast.data.dataset import CountDataset
from countcast.evaluation.calibration import decile_table, format_deciles
from countcast.models.ensemble import RateEnsemble
from countcast.training.ensemble import prepare_data


def member_table(members) -> str:
    rows = ["member  steps  final_loss  holdout_dev  monitor_evals  seconds"]
    for m in members:
        rows.append(f"{m.member:>6}  {m.steps:>5}  {m.final_loss:>10.5f}  {m.holdout_deviance:>11.5f}  "
                    f"{len(m.monitor):>13}  {m.seconds:>7.2f}")
    return "\n".join(rows)


def print_report(cfg, res) -> None:
    print(member_table(res.members))
    _, holdout, _, _ = prepare_data(compose(cfg))
    ds = CountDataset(holdout)
    with torch.no_grad():
        mu = torch.exp(RateEnsemble(res.models).eval()(ds.cat, ds.num, ds.offset))
    print(format_deciles(decile_table(ds.y, mu)))
