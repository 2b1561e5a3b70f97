"""Hidden-check driver: run the workspace's ``train.train(cfg, rank)`` on 2 gloo ranks.

    python driver.py --workspace DIR --out RESULT.json --overrides JSON
                          --world-size 2 --pg-timeout 10

The driver owns the process group (world size, rendezvous, timeout) and the TrainConfig
knobs. Each rank calls the agent's ``train()``, then fingerprints the final full
(unsharded) parameters. Rank 0 also reports the per-epoch history returned by ``train()``
(its return value: nothing printed by the agent code is parsed). The parent writes one JSON
file with both ranks' records. Before importing agent code each rank takes references to
the torch functions the verification relies on, and it refuses to report (exit 3) if agent
code replaced any of them.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import socket
import sys
import time
import traceback
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.distributed.distributed_c10d as c10d
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch.distributed.tensor import DTensor

_COLLECTIVES = (
    "all_reduce", "reduce", "all_gather", "all_gather_into_tensor", "all_gather_object",
    "reduce_scatter", "reduce_scatter_tensor", "broadcast", "broadcast_object_list",
    "barrier", "monitored_barrier", "init_process_group", "destroy_process_group",
    "new_group", "get_rank", "get_world_size", "is_initialized",
)


def _guarded() -> dict[str, object]:
    """Identity of every torch callable whose replacement would falsify the verdict."""
    refs: dict[str, object] = {}
    for name in _COLLECTIVES:
        for mod_name, mod in (("torch.distributed", dist), ("distributed_c10d", c10d)):
            if hasattr(mod, name):
                refs[f"{mod_name}.{name}"] = getattr(mod, name)
    refs["DTensor.full_tensor"] = DTensor.full_tensor
    refs["torch.Tensor.item"] = torch.Tensor.item
    refs["torch.Tensor.tolist"] = torch.Tensor.tolist
    refs["torch.nn.functional.cross_entropy"] = F.cross_entropy
    refs["torch.nn.Module.state_dict"] = torch.nn.Module.state_dict
    try:
        from torch.distributed.fsdp import fully_shard

        refs["torch.distributed.fsdp.fully_shard"] = fully_shard
    except ImportError:  # pragma: no cover
        pass
    return refs


_REFS = _guarded()  # taken at driver import, before any agent module is imported


def _tampered() -> list[str]:
    now = _guarded()
    return sorted(k for k, v in _REFS.items() if now.get(k) is not v)


def _fingerprint(t: torch.Tensor) -> list[float]:
    """(sum, sum of squares, fixed projection) of a full tensor, in float64."""
    flat = t.detach().reshape(-1).to(torch.float64)
    proj = torch.cos(torch.arange(flat.numel(), dtype=torch.float64) * 0.7311)
    return [float(flat.sum()), float((flat * flat).sum()), float((flat * proj).sum())]


def _jsonable_history(history) -> list[dict]:
    out = []
    for rec in list(history):
        row = {}
        for key, val in dict(rec).items():
            if isinstance(val, torch.Tensor):
                val = val.detach().reshape(-1)[0]
            try:
                num = float(val)
            except (TypeError, ValueError):
                continue
            row[str(key)] = num if math.isfinite(num) else repr(num)
        out.append(row)
    return out


def _rank_main(rank: int, world_size: int, port: int, workspace: str, overrides: dict,
               pg_timeout: float, out_dir: str) -> None:
    record: dict = {"rank": rank}
    os.chdir(workspace)
    sys.path.insert(0, workspace)
    import config as agent_config  # agent code from here on
    import train as agent_train

    bad = _tampered()
    if bad:
        record["tampered"] = bad
        _write(out_dir, rank, record)
        raise SystemExit(3)

    dist.init_process_group(
        "gloo",
        init_method=f"tcp://127.0.0.1:{port}",
        rank=rank,
        world_size=world_size,
        timeout=timedelta(seconds=pg_timeout),
    )
    cfg = dataclasses.replace(
        agent_config.TrainConfig(),
        world_size=world_size,
        master_port=port,
        pg_timeout_s=pg_timeout,
        **overrides,
    )
    t0 = time.monotonic()
    result = agent_train.train(cfg, rank)
    record["train_s"] = round(time.monotonic() - t0, 3)

    bad = _tampered()
    if bad:
        record["tampered"] = bad
        _write(out_dir, rank, record)
        raise SystemExit(3)

    params = {}
    for name, tensor in sorted(result.model.state_dict().items()):
        full = tensor.full_tensor() if isinstance(tensor, DTensor) else tensor
        params[name] = _fingerprint(full)
    record["params"] = params
    record["history"] = _jsonable_history(result.history)
    _write(out_dir, rank, record)  # before teardown
    dist.destroy_process_group()
    time.sleep(0.5)


def _write(out_dir: str, rank: int, record: dict) -> None:
    path = os.path.join(out_dir, f"rank{rank}.json")
    with open(path + ".tmp", "w") as fh:
        json.dump(record, fh)
    os.replace(path + ".tmp", path)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workspace", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--overrides", required=True)
    ap.add_argument("--world-size", type=int, default=2)
    ap.add_argument("--pg-timeout", type=float, default=10.0)
    a = ap.parse_args()
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    out_dir = os.path.dirname(os.path.abspath(a.out))
    for r in range(a.world_size):
        try:
            os.remove(os.path.join(out_dir, f"rank{r}.json"))
        except FileNotFoundError:
            pass
    t0 = time.monotonic()
    error = None
    try:
        mp.spawn(
            _rank_main,
            args=(a.world_size, _free_port(), os.path.abspath(a.workspace),
                  json.loads(a.overrides), a.pg_timeout, out_dir),
            nprocs=a.world_size,
            join=True,
        )
    except Exception as exc:  # a rank raised or died: report it, keep what was written
        error = f"{type(exc).__name__}: {exc}"
        traceback.print_exc()
    ranks = {}
    for r in range(a.world_size):
        path = os.path.join(out_dir, f"rank{r}.json")
        if os.path.exists(path):
            with open(path) as fh:
                ranks[str(r)] = json.load(fh)
    with open(a.out, "w") as fh:
        json.dump({"error": error, "wall_s": round(time.monotonic() - t0, 3), "ranks": ranks}, fh)
    return 1 if error else 0


if __name__ == "__main__":
    sys.exit(main())
