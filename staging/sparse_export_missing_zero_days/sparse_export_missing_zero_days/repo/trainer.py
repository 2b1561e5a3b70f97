"""Training loop and holdout scoring."""

from __future__ import annotations

import numpy as np
import torch
from torch.utils.data import DataLoader

from losses import poisson_deviance, poisson_loss
from utils import get_logger

log = get_logger("shelfcast.trainer")


def train_model(model: torch.nn.Module, loader: DataLoader, epochs: int, lr: float, weight_decay: float,
                log_every: int = 0) -> list[float]:
    """Adam on the Poisson likelihood with a cosine learning-rate decay to 0 over the run; returns each
    epoch's mean training loss."""
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs * len(loader))
    history, step = [], 0
    for epoch in range(epochs):
        model.train()
        total, rows = 0.0, 0
        for batch in loader:
            loss = poisson_loss(model(batch), batch["units"])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            schedule.step()
            step += 1
            total += loss.item() * len(batch["units"])
            rows += len(batch["units"])
            if log_every and step % log_every == 0:
                log.info("step %d loss %.4f", step, loss.item())
        history.append(total / rows)
        log.info("epoch %d: train loss %.5f", epoch, history[-1])
    return history


@torch.no_grad()
def predict(model: torch.nn.Module, loader: DataLoader) -> np.ndarray:
    """Expected units of every row of the loader, in order."""
    was_training = model.training
    model.eval()
    out = [torch.exp(model(batch)) for batch in loader]
    model.train(was_training)
    return torch.cat(out).numpy()


def holdout_scores(mu: np.ndarray, units: np.ndarray) -> float:
    return float(poisson_deviance(torch.from_numpy(mu), torch.from_numpy(units)))
