"""Train the telemetry fault classifier.

Usage: python train.py
"""

from __future__ import annotations

import logging
import time

import torch
import torch.nn.functional as F

from config import Config
from data_loader import make_loaders
from model import build_model

log = logging.getLogger("train")


def compile_model(model: torch.nn.Module, cfg: Config) -> torch.nn.Module:
    """Wrap ``model`` with torch.compile as configured (single graph required)."""
    if not cfg.compile:
        return model
    log.info("compiling model: backend=%s fullgraph=%s", cfg.backend, cfg.fullgraph)
    return torch.compile(model, backend=cfg.backend, fullgraph=cfg.fullgraph)


@torch.no_grad()
def evaluate(model: torch.nn.Module, loader) -> tuple[float, float]:
    """Mean cross-entropy and accuracy over ``loader``."""
    model.eval()
    total_loss, correct, count = 0.0, 0, 0
    for x, y in loader:
        logits = model(x)
        total_loss += F.cross_entropy(logits, y, reduction="sum").item()
        correct += (logits.argmax(dim=1) == y).sum().item()
        count += y.numel()
    model.train()
    return total_loss / count, correct / count


def train(cfg: Config) -> dict:
    """Run training; returns per-step losses and final validation metrics."""
    torch.manual_seed(cfg.seed)
    train_loader, val_loader = make_loaders(cfg)
    model = build_model(cfg)
    compiled = compile_model(model, cfg)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)

    losses: list[float] = []
    step = 0
    start = time.monotonic()
    for epoch in range(cfg.epochs):
        for x, y in train_loader:
            logits = compiled(x)
            loss = F.cross_entropy(logits, y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            step += 1
            if step % cfg.log_every == 0:
                log.info("epoch %d step %d loss %.4f", epoch, step, losses[-1])
            if cfg.max_steps and step >= cfg.max_steps:
                break
        val_loss, val_acc = evaluate(compiled, val_loader)
        log.info("epoch %d done: val_loss %.4f val_acc %.3f (%.1fs)",
                 epoch, val_loss, val_acc, time.monotonic() - start)
        if cfg.max_steps and step >= cfg.max_steps:
            break

    return {"losses": losses, "steps": step, "val_loss": val_loss, "val_acc": val_acc}


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    cfg = Config()
    log.info("config: %s", cfg)
    result = train(cfg)
    log.info("finished %d steps: final train loss %.4f, val_loss %.4f, val_acc %.3f",
             result["steps"], result["losses"][-1], result["val_loss"], result["val_acc"])


if __name__ == "__main__":
    main()
