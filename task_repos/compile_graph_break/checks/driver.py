"""Check driver: imports the workspace's model and training code and measures them.

Usage: python driver.py WORKSPACE OUT_JSON

Runs in a fresh child process (never in the check's own process). It takes references to
the torch entry points it relies on BEFORE importing agent code and refuses to report (exit
3) if any of them was replaced. It writes raw measurements to OUT_JSON; the check compares
them with checks/reference.json.

Phases (each after torch._dynamo.reset()):
  explain   torch._dynamo.explain(model)(x): graph count, graph-break count, reasons
  eager     the model called eagerly on probe batches that drive both sides of the
            activation limit: outputs and gradients
  compiled  torch.compile(model, backend="eager", fullgraph=True) on the same batches
  train     the repo's train(Config) with check-owned knobs and a counting backend that
            wraps aot_eager, so we see that the compiled graph runs at every step
"""

from __future__ import annotations

import json
import os
import sys
import traceback

import torch
import torch._dynamo
import torch._dynamo.eval_frame
import torch.nn.functional as F
import torch.optim
from torch._dynamo.backends.registry import lookup_backend, register_backend
from torch._dynamo.utils import counters

# ---- check-owned knobs ---------------------------------------------------------------------
WEIGHT_SEED = 7321          # model parameters for the explain / eager / compiled phases
PROBE_SEED = 90210          # probe inputs
PROBE_BATCH = 16
PROBE_SCALES = (0.02, 0.1, 0.5, 2.0, 8.0, 40.0)   # small -> no block rescales; large -> all do
MODEL_KNOBS = dict(num_features=20, num_classes=4, width=48, expansion=2, depth=3,
                   max_update=3.0)
TRAIN_KNOBS = dict(seed=20417, train_samples=640, val_samples=192, batch_size=32,
                   epochs=2, max_steps=26, lr=2e-3, weight_decay=1e-4, log_every=1000,
                   compile=True, fullgraph=True, backend="check_counting_aot_eager")

# ---- references taken before agent code is imported ------------------------------------------
_GUARDED = [
    (torch, "compile"), (torch, "cond"), (torch, "where"), (torch, "manual_seed"),
    (torch, "allclose"),
    (torch._dynamo, "explain"), (torch._dynamo, "optimize"), (torch._dynamo, "reset"),
    (torch._dynamo, "is_compiling"),
    (torch.compiler, "is_compiling"), (torch.compiler, "disable"), (torch.compiler, "reset"),
    (torch._dynamo.eval_frame, "OptimizedModule"), (torch._dynamo.eval_frame, "optimize"),
    (torch._dynamo.eval_frame, "_optimize"),
    (torch._dynamo.eval_frame.OptimizedModule, "__call__"),
    (torch._dynamo.eval_frame.OptimizedModule, "forward"),
    (torch.nn.Module, "__call__"), (torch.nn.Module, "_call_impl"),
    (torch.nn.Module, "_wrapped_call_impl"),
    (torch.Tensor, "backward"), (torch.Tensor, "item"), (torch.Tensor, "tolist"),
    (torch.autograd, "backward"), (F, "cross_entropy"),
    (torch.optim.Optimizer, "zero_grad"),
]
_SAVED = {(id(owner), name): owner.__dict__.get(name, getattr(owner, name))
          for owner, name in _GUARDED}
_DYNAMO_CONFIG = torch._dynamo.config.get_config_copy()
_AOT_EAGER = lookup_backend("aot_eager")
_COUNTS = {"compiles": 0, "runs": 0}


def _counting_backend(gm, example_inputs):
    """aot_eager, counting compilations and executions of the compiled graph."""
    _COUNTS["compiles"] += 1
    compiled = _AOT_EAGER(gm, example_inputs)

    def run(*args):
        _COUNTS["runs"] += 1
        return compiled(*args)

    return run


register_backend(compiler_fn=_counting_backend, name="check_counting_aot_eager")


def tampered() -> list[str]:
    bad = []
    for owner, name in _GUARDED:
        now = owner.__dict__.get(name, getattr(owner, name, None))
        if now is not _SAVED[(id(owner), name)]:
            bad.append(f"{getattr(owner, '__name__', owner)}.{name}")
    return bad


def config_changes() -> dict[str, str]:
    now = torch._dynamo.config.get_config_copy()
    return {k: repr(now.get(k)) for k in _DYNAMO_CONFIG if now.get(k) != _DYNAMO_CONFIG[k]}


def restore_config() -> None:
    """Undo any torch._dynamo.config change made by workspace code."""
    now = torch._dynamo.config.get_config_copy()
    for key, value in _DYNAMO_CONFIG.items():
        if now.get(key) != value:
            setattr(torch._dynamo.config, key, value)


def probe_batches() -> list[tuple[torch.Tensor, torch.Tensor]]:
    gen = torch.Generator().manual_seed(PROBE_SEED)
    out = []
    for scale in PROBE_SCALES:
        x = torch.randn(PROBE_BATCH, MODEL_KNOBS["num_features"], generator=gen) * scale
        y = torch.randint(0, MODEL_KNOBS["num_classes"], (PROBE_BATCH,), generator=gen)
        out.append((x, y))
    return out


def _err(exc: BaseException) -> str:
    text = f"{type(exc).__module__}.{type(exc).__name__}: {exc}"
    return text[:1500]


def fresh_model(model_mod, cfg):
    torch.manual_seed(WEIGHT_SEED)
    return model_mod.build_model(cfg)


def outputs_and_grads(fn, params, batches) -> dict:
    """Forward every probe batch through ``fn``; logits plus gradient fingerprints."""
    logits_all = []
    for p in params.values():
        p.grad = None
    total = None
    for x, y in batches:
        logits = fn(x)
        logits_all.append(logits.detach().reshape(-1).tolist())
        loss = F.cross_entropy(logits, y)
        total = loss if total is None else total + loss
    total.backward()
    gen = torch.Generator().manual_seed(PROBE_SEED + 1)
    grads = {}
    for name, p in params.items():
        g = p.grad if p.grad is not None else torch.zeros_like(p)
        probe = torch.randn(p.numel(), generator=gen, dtype=torch.float64)
        g64 = g.detach().reshape(-1).to(torch.float64)
        grads[name] = [float(g64.norm()), float(g64 @ probe)]
    return {"logits": logits_all, "grads": grads}


def main() -> None:
    workspace, out_path = sys.argv[1], sys.argv[2]
    sys.path.insert(0, workspace)
    os.chdir(workspace)
    res: dict = {"errors": {}}
    try:
        import config as config_mod
        import model as model_mod
        import train as train_mod
    except BaseException as exc:  # noqa: BLE001  (SystemExit from agent code included)
        res["errors"]["import"] = _err(exc)
        finish(res, out_path)
        return
    res["dynamo_config_changed_at_import"] = config_changes()
    restore_config()

    try:
        cfg = config_mod.Config(**MODEL_KNOBS)
    except BaseException as exc:  # noqa: BLE001
        res["errors"]["config"] = _err(exc)
        finish(res, out_path)
        return
    batches = probe_batches()

    # explain: graphs and breaks
    torch._dynamo.reset()
    try:
        model = fresh_model(model_mod, cfg)
        ex = torch._dynamo.explain(model)(batches[-1][0])
        res["explain"] = {"graph_count": ex.graph_count,
                          "graph_break_count": ex.graph_break_count,
                          "break_reasons": [str(getattr(b, "reason", b)).split("\n")[0][:300]
                                            for b in ex.break_reasons][:5]}
    except BaseException as exc:  # noqa: BLE001
        res["errors"]["explain"] = _err(exc)

    # eager reference behaviour of the workspace model
    torch._dynamo.reset()
    try:
        model = fresh_model(model_mod, cfg)
        res["eager"] = outputs_and_grads(model, dict(model.named_parameters()), batches)
    except BaseException as exc:  # noqa: BLE001
        res["errors"]["eager"] = _err(exc)

    # compiled, single graph, eager backend
    torch._dynamo.reset()
    try:
        model = fresh_model(model_mod, cfg)
        compiled = torch.compile(model, backend="eager", fullgraph=True)
        res["compiled"] = outputs_and_grads(compiled, dict(model.named_parameters()), batches)
    except BaseException as exc:  # noqa: BLE001
        res["errors"]["compiled"] = _err(exc)

    # the repo's training loop with check-owned knobs
    torch._dynamo.reset()
    counters.clear()
    _COUNTS.update(compiles=0, runs=0)
    restore_config()
    try:
        tcfg = config_mod.Config(**MODEL_KNOBS, **TRAIN_KNOBS)
        out = train_mod.train(tcfg)
        res["train"] = {"losses": [float(v) for v in out["losses"]],
                        "steps": int(out["steps"]),
                        "val_loss": float(out["val_loss"]),
                        "val_acc": float(out["val_acc"])}
    except BaseException as exc:  # noqa: BLE001
        res["errors"]["train"] = _err(exc)
        res["errors"]["train_tb"] = traceback.format_exc()[-2500:]
    res["train_backend"] = dict(_COUNTS)
    res["train_graph_breaks"] = {str(k): int(v) for k, v in counters["graph_break"].items()}
    res["dynamo_config_changed_in_run"] = config_changes()
    finish(res, out_path)


def finish(res: dict, out_path: str) -> None:
    bad = tampered()
    if bad:
        print("refusing to report: " + ", ".join(bad), file=sys.stderr)
        sys.stderr.flush()
        os._exit(3)
    with open(out_path, "w") as fh:
        json.dump(res, fh)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
