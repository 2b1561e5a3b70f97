"""Process-group helpers (gloo on CPU for the smoke run, NCCL on the cluster)."""

from __future__ import annotations

import os
from datetime import timedelta

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from config import TrainConfig


def setup(cfg: TrainConfig, rank: int, world_size: int) -> bool:
    """Join the job's process group (if the launcher has not opened it). False: single process."""
    if world_size <= 1:
        return False
    if not dist.is_initialized():
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
        dist.init_process_group("gloo", init_method=f"tcp://{cfg.master_addr}:{cfg.master_port}",
                                rank=rank, world_size=world_size, timeout=timedelta(seconds=cfg.timeout_s))
    return True


def teardown(opened: bool) -> None:
    if opened and dist.is_initialized():
        dist.destroy_process_group()


def barrier() -> None:
    if dist.is_initialized():
        dist.barrier()


def rank() -> int:
    return dist.get_rank() if dist.is_initialized() else 0


def is_main() -> bool:
    return rank() == 0


def wrap(model: nn.Module) -> nn.Module:
    return DistributedDataParallel(model) if dist.is_initialized() else model


def unwrap(model: nn.Module) -> nn.Module:
    return model.module if isinstance(model, DistributedDataParallel) else model


def share_from_main(values: dict[str, float]) -> dict[str, float]:
    """Every rank gets rank 0's values (the other ranks pass placeholders)."""
    if not dist.is_initialized():
        return dict(values)
    keys = sorted(values)
    t = torch.tensor([values[k] if is_main() else 0.0 for k in keys], dtype=torch.float64)
    dist.all_reduce(t)
    return dict(zip(keys, t.tolist()))


def replica_fingerprint(model: nn.Module) -> torch.Tensor:
    """Per-tensor sums of the model's state (parameters and buffers), in state_dict order."""
    return torch.stack([v.detach().double().sum() for v in model.state_dict().values()])


def check_replicas(model: nn.Module) -> None:
    """Raise if any rank holds a different model state than rank 0."""
    if not dist.is_initialized():
        return
    mine = replica_fingerprint(model)
    ref = mine.clone()
    dist.broadcast(ref, src=0)
    bad = torch.tensor([float(not torch.equal(mine, ref))])
    dist.all_reduce(bad)
    if bad.item():
        names = [k for k, a, b in zip(model.state_dict(), mine, ref) if a != b]
        raise RuntimeError(f"replica check failed: {int(bad.item())} rank(s) hold a model state that differs "
                           f"from rank 0's" + (f" (here: {', '.join(names[:6])})" if names else ""))
