"""torch.compile settings shared by training and the export job."""

from __future__ import annotations

import torch
from torch import nn

from config import TrainConfig
from utils import get_logger

log = get_logger("compile")


def compile_model(model: nn.Module, cfg: TrainConfig) -> nn.Module:
    if not cfg.compile:
        return model
    log.info("compiling %s: backend=%s fullgraph=%s static_shapes=%s", type(model).__name__,
             cfg.compile_backend, cfg.fullgraph, cfg.static_shapes)
    return torch.compile(model, backend=cfg.compile_backend, fullgraph=cfg.fullgraph,
                         dynamic=False if cfg.static_shapes else None)


def graphs_compiled() -> int:
    """Graphs dynamo has compiled in this process so far."""
    from torch._dynamo.utils import counters

    return int(counters["stats"]["unique_graphs"])
