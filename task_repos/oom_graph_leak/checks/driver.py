"""Check driver: run the workspace's ``train.fit`` with check-owned knobs and measure it.

Usage: python driver.py WORKSPACE OUT_JSON CONFIG_JSON

Runs in a child process (under the check's RLIMIT_DATA). It
  * takes references to the torch functions it relies on BEFORE importing agent code,
  * installs global module hooks that count the rows every top-level model forward sees
    (split by train/eval mode and by grad mode) and tag the autograd graph of every
    grad-enabled forward with a probe object (stored in ``grad_fn.metadata``), so the number
    of forward graphs still alive can be measured at each forward and after ``fit``,
  * calls ``fit(Config(**knobs))`` and writes what it measured to OUT_JSON.
It refuses to report (exit 3) when a torch function it relies on was replaced: checked before
and after ``fit`` and at every module call during it, so a patch that is undone before ``fit``
returns is caught too.
"""

from __future__ import annotations

import gc
import json
import math
import os
import sys
import time
import weakref

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.modules.module as nn_module

# --- references taken before any agent code is imported ---------------------------------
REFS = {
    "torch.nn.Module.__call__": (nn.Module, "__call__", nn.Module.__call__),
    "torch.nn.Module._call_impl": (nn.Module, "_call_impl", nn.Module._call_impl),
    "torch.nn.Module.eval": (nn.Module, "eval", nn.Module.eval),
    "torch.nn.Module.train": (nn.Module, "train", nn.Module.train),
    "register_module_forward_hook": (nn_module, "register_module_forward_hook",
                                     nn_module.register_module_forward_hook),
    "register_module_forward_pre_hook": (nn_module, "register_module_forward_pre_hook",
                                         nn_module.register_module_forward_pre_hook),
    "torch.is_grad_enabled": (torch, "is_grad_enabled", torch.is_grad_enabled),
    "torch.set_grad_enabled": (torch, "set_grad_enabled", torch.set_grad_enabled),
    "torch.no_grad": (torch, "no_grad", torch.no_grad),
    "torch.enable_grad": (torch, "enable_grad", torch.enable_grad),
    "torch.inference_mode": (torch, "inference_mode", torch.inference_mode),
    "torch.Tensor.backward": (torch.Tensor, "backward", torch.Tensor.backward),
    "torch.autograd.backward": (torch.autograd, "backward", torch.autograd.backward),
    "torch.Tensor.item": (torch.Tensor, "item", torch.Tensor.item),
    "torch.Tensor.detach": (torch.Tensor, "detach", torch.Tensor.detach),
    "torch.Tensor.__iadd__": (torch.Tensor, "__iadd__", torch.Tensor.__iadd__),
    "torch.Tensor.__add__": (torch.Tensor, "__add__", torch.Tensor.__add__),
    "torch.Tensor.__radd__": (torch.Tensor, "__radd__", torch.Tensor.__radd__),
    "torch.Tensor.__float__": (torch.Tensor, "__float__", torch.Tensor.__float__),
    "torch.nn.functional.mse_loss": (F, "mse_loss", F.mse_loss),
    "torch.nn.MSELoss.forward": (nn.MSELoss, "forward", nn.MSELoss.forward),
    "torch.nn.Linear.forward": (nn.Linear, "forward", nn.Linear.forward),
    "torch.nn.GELU.forward": (nn.GELU, "forward", nn.GELU.forward),
    "torch.nn.functional.linear": (F, "linear", F.linear),
    "torch.nn.functional.gelu": (F, "gelu", F.gelu),
    "weakref.ref": (weakref, "ref", weakref.ref),
    "gc.get_referrers": (gc, "get_referrers", gc.get_referrers),
}


_FROZEN = tuple((name, owner, attr, obj) for name, (owner, attr, obj) in REFS.items())


def replaced_refs() -> list[str]:
    return [name for name, owner, attr, obj in _FROZEN if getattr(owner, attr, None) is not obj]


class _Probe:
    """Lives exactly as long as the autograd graph it is attached to."""


class ForwardMonitor:
    """Global forward hooks: rows per mode and liveness of forward graphs."""

    def __init__(self) -> None:
        self.children: set[int] = set()  # ids of modules owned by another module seen so far
        self.seen: set[int] = set()
        self.rows_train = 0
        self.rows_eval = 0
        self.forwards_train = 0
        self.forwards_eval = 0
        self.eval_rows_with_grad = 0
        self.probes: list[weakref.ref] = []
        self.max_live_train = 0
        self.max_live_eval = 0
        self.calls = 0
        self.tampered: set[str] = set()  # torch functions found replaced while fit() ran
        self.pre = nn_module.register_module_forward_pre_hook(self._pre)
        self.post = nn_module.register_module_forward_hook(self._post)

    def live(self) -> int:
        self.probes = [p for p in self.probes if p() is not None]
        return len(self.probes)

    def _pre(self, module, args):
        bad = replaced_refs()
        if bad:
            self.tampered.update(bad)
        # A forward is "top-level" when the module is not a submodule of a module whose
        # forward was seen before. (Not a depth counter: a forward that raises never runs
        # its post hook, and a swallowed exception must not break the accounting.)
        if id(module) not in self.seen:
            self.seen.add(id(module))
            for sub in module.modules():
                if sub is not module:
                    self.children.add(id(sub))

    def _post(self, module, args, output):
        if id(module) in self.children:
            return
        if next(module.parameters(), None) is None:  # loss modules etc.
            return
        if not isinstance(output, torch.Tensor):
            return
        self.calls += 1
        rows = int(output.shape[0]) if output.dim() > 0 else 1
        grad_fn = output.grad_fn
        if grad_fn is not None:
            probe = _Probe()
            grad_fn.metadata["check_probe"] = probe
            self.probes.append(weakref.ref(probe))
        live = self.live()
        # validation = any forward that is not a training forward (eval mode or grad disabled)
        if module.training and torch.is_grad_enabled():
            self.rows_train += rows
            self.forwards_train += 1
            self.max_live_train = max(self.max_live_train, live)
        else:
            self.rows_eval += rows
            self.forwards_eval += 1
            self.max_live_eval = max(self.max_live_eval, live)
            if grad_fn is not None:
                self.eval_rows_with_grad += rows

    def installed(self) -> bool:
        return (self.pre.id in nn_module._global_forward_pre_hooks
                and self.post.id in nn_module._global_forward_hooks)


def describe(value) -> dict:
    """Convert a reported loss to a float and say whether it is still attached to a graph."""
    info = {"type": type(value).__name__, "attached": False, "grad_fn": None}
    if isinstance(value, torch.Tensor):
        info["attached"] = bool(value.requires_grad)
        info["grad_fn"] = type(value.grad_fn).__name__ if value.grad_fn is not None else None
        info["value"] = float(value.detach().reshape(-1)[0]) if value.numel() else float("nan")
    else:
        try:
            info["value"] = float(value)
        except (TypeError, ValueError):
            info["value"] = float("nan")
    if not math.isfinite(info["value"]):
        info["value"] = None
    return info


def main() -> int:
    workspace, out_path, knobs_json = sys.argv[1], sys.argv[2], sys.argv[3]
    del sys.argv[1:]
    knobs = json.loads(knobs_json)
    os.chdir(workspace)
    sys.path.insert(0, workspace)

    monitor = ForwardMonitor()

    import config as agent_config  # noqa: E402  (agent code)
    import train as agent_train  # noqa: E402

    bad = replaced_refs()
    if bad:
        print("DRIVER: torch functions were replaced by workspace code: " + ", ".join(bad))
        return 3

    cfg = agent_config.Config(**knobs)
    start = time.monotonic()
    history = agent_train.fit(cfg)
    duration = time.monotonic() - start
    live_after_fit = monitor.live()

    bad = sorted(set(replaced_refs()) | monitor.tampered)
    if bad:
        print("DRIVER: torch functions were replaced by workspace code: " + ", ".join(bad))
        return 3
    if not monitor.installed():
        print("DRIVER: the check's module hooks were removed by workspace code")
        return 3

    epochs = []
    for entry in list(history):
        epochs.append({
            "epoch": int(entry["epoch"]),
            "train_loss": describe(entry["train_loss"]),
            "val_loss": describe(entry["val_loss"]),
        })
    result = {
        "epochs": epochs,
        "rows_train": monitor.rows_train,
        "rows_eval": monitor.rows_eval,
        "forwards_train": monitor.forwards_train,
        "forwards_eval": monitor.forwards_eval,
        "eval_rows_with_grad": monitor.eval_rows_with_grad,
        "max_live_graphs_train": monitor.max_live_train,
        "max_live_graphs_eval": monitor.max_live_eval,
        "live_graphs_after_fit": live_after_fit,
        "fit_seconds": round(duration, 2),
        "torch_threads": torch.get_num_threads(),
    }
    tmp = out_path + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(result, fh)
    os.replace(tmp, out_path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
