"""Evaluation of a trained model on the fixed holdout slice."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn


@torch.no_grad()
def holdout_loss(model: nn.Module, batch: tuple[torch.Tensor, torch.Tensor],
                 loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> float:
    was_training = model.training
    model.eval()
    x, y = batch
    value = loss_fn(model(x), y).item()
    model.train(was_training)
    return value
