"""Sharded data-parallel training of the sensor classifier (FSDP2, gloo, CPU).

Usage:
    python train.py

Launches ``TrainConfig.world_size`` worker processes on this host. Each worker trains on
its shard of the data; parameters, gradients and optimizer state are sharded with FSDP2.
Rank 0 logs progress and the per-epoch metrics.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
import time
from dataclasses import dataclass, field

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch import nn

from config import TrainConfig
from data_loader import build_dataloaders
from distributed import cleanup_distributed, find_free_port, is_main_process, setup_distributed
from metrics import AverageMeter
from model import SensorClassifier, shard_model

log = logging.getLogger("train")


@dataclass
class TrainResult:
    """What a training run produced on this rank."""

    model: nn.Module
    history: list[dict] = field(default_factory=list)  # per-epoch metrics (rank 0)


def setup_logging(rank: int) -> None:
    logging.basicConfig(
        level=logging.INFO if rank == 0 else logging.WARNING,
        format=f"%(asctime)s [rank {rank}] %(message)s",
        datefmt="%H:%M:%S",
        stream=sys.stdout,
        force=True,
    )


@torch.no_grad()
def evaluate(model: nn.Module, loader) -> tuple[float, float]:
    """Validation loss and accuracy over the whole validation set (all ranks' shards)."""
    model.eval()
    loss_meter, acc_meter = AverageMeter(), AverageMeter()
    for x, y in loader:
        logits = model(x)
        loss_meter.update(F.cross_entropy(logits, y).item(), y.numel())
        acc_meter.update((logits.argmax(dim=1) == y).float().mean().item(), y.numel())
    model.train()
    val_loss, _ = loss_meter.global_mean()
    val_acc, _ = acc_meter.global_mean()
    return val_loss, val_acc


def train(cfg: TrainConfig, rank: int) -> TrainResult:
    """Run the training loop on this rank. The process group must already be initialised."""
    world_size = dist.get_world_size()
    torch.manual_seed(cfg.seed)  # identical initial weights on every rank

    model = SensorClassifier(cfg.num_features, cfg.hidden_dim, cfg.num_blocks, cfg.num_classes)
    model = shard_model(model, world_size)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    train_loader, train_sampler, val_loader = build_dataloaders(cfg, rank, world_size)

    if is_main_process():
        n_params = sum(p.numel() for p in model.parameters())
        log.info(
            "training %d params on %d ranks | %d steps/epoch | %d epochs",
            n_params, world_size, len(train_loader), cfg.epochs,
        )

    history: list[dict] = []
    step = 0
    for epoch in range(1, cfg.epochs + 1):
        train_sampler.set_epoch(epoch)
        meter = AverageMeter()
        t0 = time.perf_counter()
        for x, y in train_loader:
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            meter.update(loss.item(), y.numel())
            step += 1
            if is_main_process() and step % cfg.log_every == 0:
                log.info("epoch %d step %4d | loss %.4f", epoch, step, loss.item())

        val_loss, val_acc = evaluate(model, val_loader)

        if is_main_process():
            train_loss, samples = meter.global_mean()
            history.append(
                {
                    "epoch": epoch,
                    "train_loss": train_loss,
                    "val_loss": val_loss,
                    "val_acc": val_acc,
                    "samples": samples,
                }
            )
            log.info(
                "epoch %d/%d | train loss %.5f | val loss %.5f | val acc %.3f | %d samples | %.1fs",
                epoch, cfg.epochs, train_loss, val_loss, val_acc, samples,
                time.perf_counter() - t0,
            )
        dist.barrier()

    return TrainResult(model=model, history=history)


def worker(rank: int, cfg: TrainConfig) -> None:
    """Entry point of one spawned process."""
    setup_logging(rank)
    setup_distributed(rank, cfg)
    result = train(cfg, rank)
    if is_main_process():
        last = result.history[-1]
        print(
            f"final | epochs {len(result.history)} | train loss {last['train_loss']:.5f} | "
            f"val loss {last['val_loss']:.5f} | val acc {last['val_acc']:.3f}",
            flush=True,
        )
    cleanup_distributed()


def main() -> None:
    cfg = TrainConfig()
    if cfg.master_port == 0:
        cfg = dataclasses.replace(cfg, master_port=find_free_port(cfg.master_addr))
    mp.spawn(worker, args=(cfg,), nprocs=cfg.world_size, join=True)


if __name__ == "__main__":
    main()
