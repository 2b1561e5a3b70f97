"""Training objective: Huber loss on the wear label, averaged over every labelled row of the step.

Ranks hold different numbers of labelled rows per batch (missing labels, short last batches), so
a per-rank mean followed by DDP's average over ranks would weight rows unequally. Each rank
instead scales its sum by ``world_size / labelled rows of the step on all ranks``: after DDP
averages the gradients over ranks, the step's gradient is the mean over every labelled row.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from distributed import all_reduce_sum, world


@dataclass
class LossOut:
    loss: torch.Tensor  # what backward() is called on
    loss_sum: float  # this rank's summed loss over its labelled rows (for metrics)
    labelled: float  # this rank's labelled rows


class GlobalMeanLoss(nn.Module):
    def __init__(self, delta: float = 1.0) -> None:
        super().__init__()
        self.delta = delta

    def forward(self, pred: torch.Tensor, target: torch.Tensor, weight: torch.Tensor) -> LossOut:
        per_row = F.huber_loss(pred, target, reduction="none", delta=self.delta) * weight
        local = weight.sum().detach().to(torch.float64)
        step_total = all_reduce_sum(local.clone().reshape(1))[0]
        _, world_size = world()
        loss = per_row.sum() * (world_size / step_total.clamp_min(1.0)).to(per_row.dtype)
        return LossOut(loss, float(per_row.detach().sum()), float(local))
