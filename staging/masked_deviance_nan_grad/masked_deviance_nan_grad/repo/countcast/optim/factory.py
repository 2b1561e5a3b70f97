"""Optimizers with the usual parameter groups: no weight decay on biases, norms and embeddings."""

from __future__ import annotations

import torch
from torch import nn

from countcast.config.sections import OptimSection


def param_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    decay, no_decay = [], []
    for module_name, module in model.named_modules():
        for name, p in module.named_parameters(recurse=False):
            if not p.requires_grad:
                continue
            if name == "bias" or isinstance(module, (nn.LayerNorm, nn.Embedding)):
                no_decay.append(p)
            else:
                decay.append(p)
    groups = [{"params": decay, "weight_decay": weight_decay}]
    if no_decay:
        groups.append({"params": no_decay, "weight_decay": 0.0})
    return groups


def build_optimizer(model: nn.Module, cfg: OptimSection) -> torch.optim.Optimizer:
    groups = param_groups(model, cfg.weight_decay)
    if cfg.name == "adamw":
        return torch.optim.AdamW(groups, lr=cfg.lr)
    if cfg.name == "adam":
        return torch.optim.Adam(groups, lr=cfg.lr)
    if cfg.name == "sgd":
        return torch.optim.SGD(groups, lr=cfg.lr, momentum=0.9, nesterov=True)
    raise ValueError(f"unknown optimizer {cfg.name!r} (adamw, adam, sgd)")
