"""The kit's generic check driver: run a workspace's training entry point with drawn knobs.

Usage: ``python kit_driver.py SPEC.json`` (in a child of the check, never in the check itself).
SPEC names the workspace, the task's entry points (``config = "module:Class"``, ``train =
"module:function"``), the knobs, how ``train`` is called (``call``: a list of ``cfg``, ``rank``,
``world_size``), the world size (0: one process; N: N gloo ranks on a free port), whether the
driver opens the process group itself (with the check's timeout), the config fields it sets
(``set``; ``"$port"`` is the free port) and an optional probe module of the task (``probe``:
``install(ctx)`` before agent code is imported, ``report(ctx) -> dict`` after ``train``) and
whether the project uses torch (``torch``, default true; false: torch is neither imported nor
guarded, no state is saved, one process only).

Each rank, before importing agent code, takes the kit's ``TamperGuard`` snapshot and starts
watching; then it builds ``dataclasses.replace(Config(), **knobs, **set)``, calls ``train``,
and writes ``rank{r}.json`` (the return value as a tree of numbers, the paths of returned
tensors still attached to an autograd graph, the probe's report, the guard's findings, the
error) and ``rank{r}.pt`` (the state_dict of every module in the return value, full tensors).

With several ranks, each also reports what it trained on (``consumed``): a fingerprint of every
row given to a top-level module forward in training mode with grad, taken by a global module
hook of the verification's own, and its rows per optimizer step (the largest such forward between
two steps: a second model fed the first one's activations is no more data); the check compares
what each rank consumed with the reference run's (a rank that trains on every rank's data does
the whole job: data parallelism is not that).
The guard also compares torch's process-wide state with its snapshot after the workspace is
imported and when ``train`` returns, and switches every returned module to eval mode and back.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import json
import math
import os
import shutil
import socket
import sys
import time
import traceback
from typing import Any


def _listing(dirs: list[str]) -> dict[str, set[str]]:
    return {d: set(os.listdir(d)) for d in dirs if os.path.isdir(d)}


# what the driver's own imports leave in TMPDIR / HOME (torch's cache dirs) is removed before
# agent code runs, so those dirs look as in the agent's own runs
_BEFORE = _listing(sorted({os.environ.get("TMPDIR", "/tmp"), os.path.expanduser("~")}))

from tamper_guard import TamperGuard  # type: ignore[import-not-found]  # noqa: E402  (beside this file)


class _Absent:
    """Stands for torch's classes in a torch-free project: nothing is an instance of it."""


_save: Any = None
_Tensor: Any = _Absent
_Module: Any = _Absent
_dumps = json.dumps


def _bind_torch() -> None:
    """Take torch's save and classes before agent code runs (it could replace them later)."""
    global _save, _Tensor, _Module
    import torch

    _save, _Tensor, _Module = torch.save, torch.Tensor, torch.nn.Module


def summarize(value: Any, path: str, ctx: dict[str, Any]) -> Any:
    """The return value of ``train`` as JSON: numbers, lists and dicts; modules set aside."""
    if isinstance(value, _Module):
        ctx["modules"].append((path, value))
        return "<module>"
    if isinstance(value, _Tensor):
        if value.requires_grad:
            ctx["attached"].append(path)
        flat = value.detach().reshape(-1).double()
        vals = [_num(float(v)) for v in flat[:4096].tolist()]
        return vals[0] if value.dim() == 0 and vals else vals
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): summarize(v, f"{path}.{k}" if path else str(k), ctx) for k, v in list(value.items())}
    if isinstance(value, (list, tuple)):
        return [summarize(v, f"{path}.{i}" if path else str(i), ctx) for i, v in enumerate(list(value))]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return _num(value)
    return f"<{type(value).__name__}>"


def _num(x: float | int) -> float | int | str:
    if isinstance(x, float) and not math.isfinite(x):
        return repr(x)
    return x


def _state(module: Any) -> dict[str, Any]:
    out = {}
    for k, t in _Module.state_dict(module).items():
        full = t.full_tensor() if hasattr(t, "full_tensor") else t  # a DTensor (FSDP2): all ranks take part
        out[k] = full.detach().clone().contiguous()
    return out


class Consumption:
    """Fingerprints of the rows each top-level forward in training mode (with grad) is given,
    forward by forward (the ranks' n-th forwards are the same step's), and the rows trained on:
    per optimizer step, its largest forward's (an auxiliary model in its own wrapper, fed the
    first one's activations in the same step, is a second forward over the same samples)."""

    LIMIT = 200_000  # fingerprints kept (rows counted beyond)

    def __init__(self, guard: Any) -> None:
        import torch
        import torch.nn.modules.module as module_mod
        import torch.optim.optimizer as optim_mod

        self.torch, self.depth, self.rows, self.kept, self.step_rows = torch, 0, 0, 0, 0
        self.prints: list[list[int]] = []  # per forward, in order
        compiling = torch.compiler.is_compiling

        def pre(module: Any, args: Any) -> None:
            if compiling():
                return
            self.depth += 1
            if self.depth == 1 and module.training and torch.is_grad_enabled():
                self.take(args)

        def post(module: Any, args: Any, output: Any) -> None:
            if not compiling():
                self.depth = max(0, self.depth - 1)

        def step(optimizer: Any, args: Any, kwargs: Any) -> None:
            self.end_step()

        h1 = module_mod.register_module_forward_pre_hook(pre)
        h2 = module_mod.register_module_forward_hook(post, always_call=True)
        h3 = optim_mod.register_optimizer_step_pre_hook(step)
        guard.own(module_mod._global_forward_pre_hooks, h1.id, pre)
        guard.own(module_mod._global_forward_hooks, h2.id, post)
        guard.own(optim_mod._global_optimizer_pre_hooks, h3.id, step)

    def end_step(self) -> None:
        self.rows += self.step_rows
        self.step_rows = 0

    def take(self, args: Any) -> None:
        t = next((a for a in args if isinstance(a, _Tensor) and a.dim() >= 1), None)
        if t is None:
            return
        if t.numel() == 0:  # an empty batch (a rank out of data): a forward of no rows
            self.prints.append([])
            return
        rows = t.detach().reshape(t.shape[0], -1)
        self.step_rows = max(self.step_rows, int(rows.shape[0]))
        if self.kept < self.LIMIT:
            flat = rows.to(self.torch.float64)
            # a cheap fingerprint of each row: two weighted sums (equal rows give equal prints)
            w = self.torch.arange(1, flat.shape[1] + 1, dtype=self.torch.float64)
            a, b = flat.sum(1).tolist(), (flat * w).sum(1).tolist()
            self.prints.append([hash((round(x, 9), round(y, 9))) for x, y in zip(a, b, strict=True)])
            self.kept += len(a)

    def report(self) -> dict[str, Any]:
        self.end_step()  # forwards after the last optimizer step
        return {"rows": self.rows, "prints": self.prints}


def _load(target: str) -> Any:
    mod, _, attr = target.partition(":")
    return getattr(importlib.import_module(mod), attr)


def run_rank(rank: int | None, world: int, spec: dict[str, Any]) -> int:
    """One rank (or the single process): returns the exit code."""
    ctx: dict[str, Any] = {"rank": rank, "world_size": world, "spec": spec, "modules": [],
                           "attached": []}
    if spec.get("torch", True):  # in each rank, before agent code
        _bind_torch()
    probe = None
    if spec.get("probe"):
        here = os.path.dirname(os.path.abspath(__file__))
        loader = importlib.util.spec_from_file_location("check_probe", os.path.join(here, spec["probe"]))
        assert loader is not None and loader.loader is not None
        probe = importlib.util.module_from_spec(loader)
        sys.modules["check_probe"] = probe  # dynamo looks hooks' modules up by name
        loader.loader.exec_module(probe)
    guard = TamperGuard() if spec.get("torch", True) else TamperGuard(modules=())
    if probe is not None:
        probe.install(ctx)
        guard.adopt()
    guard.watch()
    meter = Consumption(guard) if world and spec.get("torch", True) else None
    for d, names in _BEFORE.items():
        for name in set(os.listdir(d)) - names:
            path = os.path.join(d, name)
            shutil.rmtree(path, ignore_errors=True) if os.path.isdir(path) else os.unlink(path)
    report: dict[str, Any] = {"rank": rank, "error": None, "tampered": []}
    out = spec["out"]
    ws = spec["workspace"]
    os.chdir(ws)
    sys.path.insert(0, ws)
    opened = False
    try:
        config_cls = _load(spec["config"])
        train = _load(spec["train"])
        guard.state_changes("after the workspace was imported")
        fields = {f.name for f in dataclasses.fields(config_cls)}
        values = {**spec["knobs"], **spec.get("set", {})}
        values = {k: (spec["port"] if v == "$port" else v) for k, v in values.items()}
        missing = sorted(set(values) - fields)
        if missing:
            raise RuntimeError(f"the config class has no field(s) {missing}")
        cfg = dataclasses.replace(config_cls(), **values)
        ctx["cfg"] = cfg
        if spec.get("process_group") and rank is not None:
            from datetime import timedelta

            import torch.distributed as dist

            dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{spec['port']}", rank=rank,
                                    world_size=world, timeout=timedelta(seconds=spec["process_group"]))
            opened = True
        args = {"cfg": cfg, "rank": rank, "world_size": world}
        start = time.monotonic()
        result = train(*[args[a] for a in spec["call"]])
        report["train_s"] = round(time.monotonic() - start, 3)
        guard.state_changes("when training returned")
        ctx["result"] = result
        report["result"] = summarize(result, "", ctx)
        report["attached"] = list(ctx["attached"])
        if probe is not None and hasattr(probe, "report"):
            report["probe"] = probe.report(ctx)
        states = {}
        for path, module in ctx["modules"][:1]:
            inner = getattr(module, "module", module)  # DDP wraps its module
            states = _state(inner if isinstance(inner, _Module) else module)
            report["state_of"] = path
        if _save is not None:
            _save(states, os.path.join(out, f"rank{rank or 0}.pt"))
        if meter is not None:
            report["consumed"] = meter.report()
        guard.mode_switch([m for _, m in ctx["modules"]])
    except BaseException as exc:
        report["error"] = "".join(traceback.format_exception(exc))[-3000:]
        if probe is not None and hasattr(probe, "report") and "probe" not in report:
            try:  # what the probe saw up to the failure explains it (e.g. graphs kept until memory ran out)
                report["probe"] = probe.report(ctx)
            except Exception:
                pass
    report["tampered"] = guard.check()
    path = os.path.join(out, f"rank{rank or 0}.json")
    with open(path + ".tmp", "w") as fh:
        fh.write(_dumps(report))
    os.replace(path + ".tmp", path)
    if opened:
        import torch.distributed as dist

        if dist.is_initialized():
            dist.destroy_process_group()
    if world:
        time.sleep(0.5)  # gloo's threads release their work objects before exit
    return 3 if report["error"] or report["tampered"] else 0


def _spawned(rank: int, world: int, spec: dict[str, Any]) -> None:
    code = run_rank(rank, world, spec)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # agent atexit handlers do not get the last word on the exit status


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> int:
    with open(sys.argv[1]) as fh:
        spec = json.load(fh)
    del sys.argv[1:]
    world = int(spec.get("world_size") or 0)
    if world and not spec.get("torch", True):
        print("kit_driver: a torch-free project runs in one process (world_size 0)", file=sys.stderr)
        return 2
    if not world:
        code = run_rank(None, 0, spec)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    spec["port"] = _free_port()
    # the ranks are forked from this process once it has imported torch and its distributed
    # stack (no torch op has run here, so no thread pool exists to be forked): each rank starts
    # without paying for those imports, and imports the workspace and the probe itself
    import torch.distributed
    import torch.multiprocessing as mp
    import torch.nn.parallel  # noqa: F401

    try:
        mp.start_processes(_spawned, args=(world, spec), nprocs=world, join=True, start_method="fork")
    except Exception as exc:  # a rank failed: its report says how
        print(f"kit_driver: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
