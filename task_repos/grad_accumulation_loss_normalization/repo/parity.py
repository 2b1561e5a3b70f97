"""Accumulation audit: a job trained with gradient accumulation must train exactly like the same
job with one full batch per optimizer step (same sessions, same order, same steps)."""

from __future__ import annotations

from dataclasses import replace

import torch

from utils import get_logger

log = get_logger("parity")


def full_batch_config(cfg):
    return replace(cfg, micro_batch_size=cfg.effective_batch_size, accum_steps=1, callbacks=())


def max_param_diff(a: torch.nn.Module, b: torch.nn.Module) -> tuple[float, str]:
    worst, where = 0.0, ""
    sb = b.state_dict()
    for name, t in a.state_dict().items():
        d = (t.double() - sb[name].double()).abs().max().item()
        if d > worst:
            worst, where = d, name
    return worst, where


def audit(cfg, result: dict, baseline: dict) -> bool:
    diff, where = max_param_diff(result["model"], baseline["model"])
    log.info("accumulation audit: micro_batch_size %d x accum_steps %d vs batch %d",
             cfg.micro_batch_size, cfg.accum_steps, cfg.effective_batch_size)
    for epoch, (a, b) in enumerate(zip(result["val_loss"], baseline["val_loss"]), start=1):
        log.info("  epoch %d  val_loss %.6f (accumulated)  %.6f (full batch)  diff %.2e", epoch, a, b, abs(a - b))
    log.info("  max |param diff| %.3e (%s), tolerance %.0e", diff, where, cfg.parity_atol)
    return diff <= cfg.parity_atol
