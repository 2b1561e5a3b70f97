"""Optimizer and learning-rate schedule (both step once per optimizer step)."""

from __future__ import annotations

import torch


def build_optimizer(model: torch.nn.Module, cfg) -> torch.optim.Optimizer:
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (no_decay if p.ndim < 2 or "norm" in name or "embed" in name else decay).append(p)
    groups = [{"params": decay, "weight_decay": cfg.weight_decay},
              {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=cfg.lr)


def build_scheduler(optimizer: torch.optim.Optimizer, cfg) -> torch.optim.lr_scheduler.LambdaLR:
    warmup = max(1, cfg.warmup_steps)
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / warmup))
