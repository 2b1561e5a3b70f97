"""Train the tabular regressor on the synthetic feature table.

Usage:
    python train.py            # default Config
    python train.py --epochs 5 --seed 7
"""

from __future__ import annotations

import argparse
import logging
import time

import torch
from torch import nn

from config import Config
from data_loader import TensorBatches, build_loaders
from model import build_model

logger = logging.getLogger("tabular")


def train_one_epoch(model: nn.Module, loader: TensorBatches, criterion: nn.Module,
                    optimizer: torch.optim.Optimizer, epoch: int, log_every: int):
    """One pass over the training set; returns the mean training loss."""
    model.train()
    loader.set_epoch(epoch)
    epoch_loss = 0.0
    for step, (features, targets) in enumerate(loader, start=1):
        optimizer.zero_grad(set_to_none=True)
        preds = model(features)
        loss = criterion(preds, targets)
        loss.backward()
        optimizer.step()
        epoch_loss += loss
        if log_every and step % log_every == 0:
            logger.info("epoch %d step %4d/%d  loss %.4f", epoch, step, len(loader), loss.item())
    return epoch_loss / len(loader)


def evaluate(model: nn.Module, loader: TensorBatches, criterion: nn.Module):
    """Mean validation loss over all validation batches."""
    model.eval()
    val_loss = 0.0
    for features, targets in loader:
        val_loss += criterion(model(features), targets)
    return val_loss / len(loader)


def fit(cfg: Config) -> list[dict]:
    """Run a full training job and return the per-epoch history."""
    torch.manual_seed(cfg.seed)
    train_loader, val_loader = build_loaders(cfg)
    model = build_model(cfg.n_features, cfg.hidden_dim)
    criterion = nn.MSELoss()
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    logger.info("train rows %d (%d batches), val rows %d (%d batches), params %d",
                train_loader.num_rows, len(train_loader), val_loader.num_rows, len(val_loader),
                sum(p.numel() for p in model.parameters()))

    history = []
    best_val = float("inf")
    for epoch in range(1, cfg.epochs + 1):
        start = time.perf_counter()
        train_loss = train_one_epoch(model, train_loader, criterion, optimizer, epoch, cfg.log_every)
        val_loss = evaluate(model, val_loader, criterion)
        best_val = min(best_val, val_loss)
        logger.info("epoch %d done in %.1fs  train_loss %.4f  val_loss %.4f",
                    epoch, time.perf_counter() - start, train_loss, val_loss)
        history.append({"epoch": epoch, "train_loss": train_loss, "val_loss": val_loss})
    logger.info("best val_loss %.4f", best_val)
    return history


def parse_args() -> Config:
    defaults = Config()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=defaults.epochs)
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--lr", type=float, default=defaults.lr)
    args = parser.parse_args()
    return Config(epochs=args.epochs, seed=args.seed, lr=args.lr)


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    cfg = parse_args()
    history = fit(cfg)
    last = history[-1]
    print(f"final epoch {last['epoch']}: train_loss={last['train_loss']:.4f} "
          f"val_loss={last['val_loss']:.4f}")


if __name__ == "__main__":
    main()
