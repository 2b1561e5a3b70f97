"""compile_recompile_storm's probe in the kit driver: graphs compiled, compiled runs, padded positions.

``install`` registers the backend the driver's config names (dynamo's eager backend, counting the
graphs dynamo hands it and every run of a compiled graph; the compiled graph's floating outputs are
scaled by 1 + the verification's secret, so the losses show whether and where the compiled graph
ran: a count alone could be forged) and a global forward pre-hook that counts the positions
(batch x length) of every top-level forward in training mode: the padding the data pipeline feeds.
``report`` returns the counts.
"""

import torch
import torch.nn.modules.module as module_mod
from torch._dynamo.backends.registry import lookup_backend, register_backend

COUNTS = {"compiles": 0, "runs": 0, "train_forwards": 0, "positions": 0, "lengths": []}
SCALE = [1.0]
DEPTH = [0]
_eager = lookup_backend("eager")


def _scaled(out):
    if isinstance(out, torch.Tensor):
        return out * SCALE[0] if out.is_floating_point() else out
    if isinstance(out, (list, tuple)):
        return type(out)(_scaled(o) for o in out)
    return out


def _backend(gm, example_inputs):
    COUNTS["compiles"] += 1
    compiled = _eager(gm, example_inputs)

    def run(*args):
        COUNTS["runs"] += 1
        return _scaled(compiled(*args))

    return run


def _pre(module, args):
    if torch.compiler.is_compiling():
        return
    DEPTH[0] += 1
    if DEPTH[0] == 1 and module.training and torch.is_grad_enabled():
        t = next((a for a in args if isinstance(a, torch.Tensor) and a.dim() == 2), None)
        if t is not None:
            COUNTS["train_forwards"] += 1
            COUNTS["positions"] += int(t.shape[0]) * int(t.shape[1])
            if len(COUNTS["lengths"]) < 4096:
                COUNTS["lengths"].append(int(t.shape[1]))


def _post(module, args, output):
    if not torch.compiler.is_compiling():
        DEPTH[0] = max(0, DEPTH[0] - 1)


def install(ctx) -> None:
    SCALE[0] = 1.0 + ctx["spec"]["secret"]
    register_backend(compiler_fn=_backend, name="check_counting_eager")
    module_mod.register_module_forward_pre_hook(_pre)
    module_mod.register_module_forward_hook(_post, always_call=True)


def report(ctx) -> dict:
    out = dict(COUNTS)
    out["distinct_lengths"] = len(set(COUNTS["lengths"]))
    out.pop("lengths")
    return out
