"""Training losses by name (``cfg.loss``)."""

from __future__ import annotations

import torch.nn.functional as F

from registry import Registry

LOSSES = Registry("loss")
LOSSES.register("mse")(lambda: F.mse_loss)
LOSSES.register("huber")(lambda: lambda pred, target: F.huber_loss(pred, target, delta=0.5))
LOSSES.register("mae")(lambda: F.l1_loss)
