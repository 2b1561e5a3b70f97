"""One optimisation step."""

from __future__ import annotations

import torch

from countcast.optim.clipping import clip_gradients


def train_step(model, loss_fn, optimizer, scheduler, batch: dict[str, torch.Tensor], grad_clip: float) -> tuple[float, float, float]:
    """Forward, backward, clip, update. Returns (loss, grad norm before clipping, lr used)."""
    model.train()
    optimizer.zero_grad(set_to_none=True)
    eta = model(batch["cat"], batch["num"], batch["offset"])
    loss = loss_fn(eta, batch["y"])
    loss.backward()
    grad_norm = clip_gradients(model.parameters(), grad_clip)
    lr = optimizer.param_groups[0]["lr"]
    optimizer.step()
    scheduler.step()
    return float(loss.detach()), grad_norm, lr
