"""Pre-emption drill: train once without interruption, once stopped after ``preempt_at`` steps
and resumed from its newest checkpoint, and compare the two runs step by step.

Both runs use the same config; the comparison covers every step the resumed process ran and
the final parameters. Exit status 1 when they differ by more than ``TOLERANCE``.
"""

from __future__ import annotations

import logging
import tempfile
from dataclasses import replace

import torch

from callbacks import Preempt, Preempted
from config import TrainConfig
from trainer import Trainer

log = logging.getLogger("forecaster.drill")
TOLERANCE = 1e-6


def run_resume_check(cfg: TrainConfig, preempt_at: int) -> int:
    with tempfile.TemporaryDirectory(prefix="resume-drill-") as tmp:
        base = replace(cfg, checkpoint_dir=tmp, resume=False)
        log.info("drill: uninterrupted run of %d steps", cfg.steps)
        full = Trainer(replace(base, run_name="uninterrupted")).fit()

        log.info("drill: run pre-empted after step %d", preempt_at)
        try:
            Trainer(replace(base, run_name="preempted"), callbacks=[Preempt(preempt_at)]).fit()
        except Preempted as exc:
            log.info("drill: %s", exc)
        log.info("drill: resuming")
        resumed = Trainer(replace(base, run_name="preempted", resume=True)).fit()

    start = resumed.start_step
    expected = full.losses[start:]
    if len(expected) != len(resumed.losses):
        log.error("resume check FAILED: resumed run did %d steps from step %d, expected %d",
                  len(resumed.losses), start, len(expected))
        return 1
    loss_diff = max((abs(a - b) for a, b in zip(resumed.losses, expected)), default=0.0)
    worst = max(range(len(expected)), key=lambda i: abs(resumed.losses[i] - expected[i]), default=0)
    ref_state, got_state = full.model.state_dict(), resumed.model.state_dict()
    param_diff = max((got_state[k] - ref_state[k]).abs().max().item() for k in ref_state)
    for i in range(0, len(expected), max(1, len(expected) // 6)):
        log.info("drill: step %3d  uninterrupted %.6f  resumed %.6f", start + i + 1, expected[i], resumed.losses[i])
    log.info("drill: final loss uninterrupted %.6f resumed %.6f; holdout uninterrupted %.6f resumed %.6f",
             expected[-1], resumed.losses[-1], full.holdout_loss, resumed.holdout_loss)
    if loss_diff > TOLERANCE or param_diff > TOLERANCE:
        log.error("resume check FAILED: resumed from step %d, max |loss diff| %.3g (at step %d), "
                  "max |param diff| %.3g (tolerance %g)", start, loss_diff, start + worst + 1, param_diff, TOLERANCE)
        return 1
    log.info("resume check passed: resumed from step %d, max |loss diff| %.3g, max |param diff| %.3g",
             start, loss_diff, param_diff)
    return 0
