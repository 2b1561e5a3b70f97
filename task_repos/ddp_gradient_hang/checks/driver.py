"""Check driver: train the workspace's model with knobs owned by the check.

Usage: python driver.py --workspace WS --out DIR --knobs JSON

Spawns ``world_size`` ranks itself; every rank imports the workspace's ``config`` and
``train`` modules, builds ``config.Config`` with the check's values and calls
``train.train(cfg, rank, world_size)``. Each rank then writes, into DIR:

* ``rank{r}.pt``       the trained model's state_dict (plain tensors)
* ``rank{r}_init.pt``  every optimised parameter as it was before the first optimizer step
* ``rank{r}.json``     the returned per-step losses, optimizer step count, tampering report
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
import traceback


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank: int, world_size: int, ws: str, out: str, knobs: dict) -> None:
    # References to the torch functions this verification relies on, taken before any
    # workspace code runs.
    import dataclasses

    import torch
    import torch.distributed as dist
    import torch.distributed.distributed_c10d as c10d
    import torch.nn.functional as F
    import torch.optim.optimizer as optim_mod
    from torch.nn.parallel import DistributedDataParallel as DDP

    guarded = {
        "torch.nn.parallel.DistributedDataParallel": (torch.nn.parallel, "DistributedDataParallel", DDP),
        "DistributedDataParallel.__init__": (DDP, "__init__", DDP.__init__),
        "DistributedDataParallel.forward": (DDP, "forward", DDP.forward),
        "DistributedDataParallel._pre_forward": (DDP, "_pre_forward", DDP._pre_forward),
        "DistributedDataParallel._post_forward": (DDP, "_post_forward", DDP._post_forward),
        "DistributedDataParallel.no_sync": (DDP, "no_sync", DDP.no_sync),
        "torch.distributed.all_reduce": (dist, "all_reduce", dist.all_reduce),
        "distributed_c10d.all_reduce": (c10d, "all_reduce", c10d.all_reduce),
        "torch.distributed.broadcast": (dist, "broadcast", dist.broadcast),
        "torch.distributed.init_process_group": (dist, "init_process_group", dist.init_process_group),
        "torch.Tensor.backward": (torch.Tensor, "backward", torch.Tensor.backward),
        "torch.autograd.backward": (torch.autograd, "backward", torch.autograd.backward),
        "torch.Tensor.item": (torch.Tensor, "item", torch.Tensor.item),
        "torch.optim.Optimizer.zero_grad": (torch.optim.Optimizer, "zero_grad", torch.optim.Optimizer.zero_grad),
        "torch.nn.functional.cross_entropy": (F, "cross_entropy", F.cross_entropy),
        "torch.nn.functional.mse_loss": (F, "mse_loss", F.mse_loss),
        "torch.nn.Module.state_dict": (torch.nn.Module, "state_dict", torch.nn.Module.state_dict),
        "torch.nn.Module.named_parameters": (torch.nn.Module, "named_parameters", torch.nn.Module.named_parameters),
        "torch.save": (torch, "save", torch.save),
    }
    save = torch.save
    report: dict = {"rank": rank, "tampered": [], "error": None}

    # Count optimizer steps and snapshot parameters before their first update.
    initial: dict[int, torch.Tensor] = {}
    counts = {"steps": 0}

    def pre_hook(opt, args, kwargs):
        for group in opt.param_groups:
            for p in group["params"]:
                if id(p) not in initial:
                    initial[id(p)] = p.detach().clone()

    def post_hook(opt, args, kwargs):
        counts["steps"] += 1

    optim_mod.register_optimizer_step_pre_hook(pre_hook)
    optim_mod.register_optimizer_step_post_hook(post_hook)

    def tampered() -> list[str]:
        return [name for name, (owner, attr, ref) in guarded.items() if getattr(owner, attr, None) is not ref]

    os.chdir(ws)
    sys.path.insert(0, ws)
    try:
        import config as ws_config
        import train as ws_train

        base = ws_config.Config()
        fields = {f.name for f in dataclasses.fields(base)}
        missing = sorted(set(knobs) - fields)
        if missing:
            raise RuntimeError(f"config.Config has no field(s) {missing}")
        cfg = dataclasses.replace(base, **knobs)
        result = ws_train.train(cfg, rank, world_size)

        losses = [float(v) for v in getattr(result, "losses", [])]
        model = getattr(result, "model", None)
        if isinstance(model, DDP):
            model = model.module
        if model is None:
            raise RuntimeError("train.train() returned no model")
        names = {id(p): n for n, p in torch.nn.Module.named_parameters(model)}
        state = {k: v.detach().clone().contiguous() for k, v in torch.nn.Module.state_dict(model).items()}
        init = {names[i]: t for i, t in initial.items() if i in names}
        report.update(losses=losses, optimizer_steps=counts["steps"], param_names=sorted(names.values()))
        report["tampered"] = tampered()
        save(state, os.path.join(out, f"rank{rank}.pt"))
        save(init, os.path.join(out, f"rank{rank}_init.pt"))
    except BaseException as exc:  # noqa: BLE001 - the report must say what happened
        report["error"] = "".join(traceback.format_exception(exc))[-3000:]
        report["tampered"] = tampered()
    with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
        json.dump(report, f)
    if dist.is_initialized():
        dist.destroy_process_group()
    time.sleep(0.5)
    if report["error"] or report["tampered"]:
        sys.exit(3)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workspace", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--knobs", required=True)
    a = ap.parse_args()
    knobs = json.loads(a.knobs)
    world_size = int(knobs.pop("world_size"))
    knobs["world_size"] = world_size
    knobs["master_port"] = _free_port()
    import torch.multiprocessing as mp

    mp.spawn(_worker, args=(world_size, os.path.abspath(a.workspace), os.path.abspath(a.out), knobs),
             nprocs=world_size, join=True)


if __name__ == "__main__":
    main()
