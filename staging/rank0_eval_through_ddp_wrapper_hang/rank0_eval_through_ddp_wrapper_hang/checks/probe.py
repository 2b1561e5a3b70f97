"""The family's probe in the kit driver: rows given to outermost module forwards that are not training
forwards (eval mode or no grad), per rank: the evaluation work each rank did (global forward hooks,
installed before agent code is imported)."""

import torch
import torch.nn.modules.module as nn_module

S = {"eval_rows": 0, "eval_forwards": 0}
DEPTH = [0]


def _pre(module, args):
    if torch.compiler.is_compiling():
        return
    DEPTH[0] += 1
    if DEPTH[0] == 1 and not (module.training and torch.is_grad_enabled()):
        x = next((a for a in args if isinstance(a, torch.Tensor) and a.dim() >= 1), None)
        if x is not None:
            S["eval_rows"] += int(x.shape[0])
            S["eval_forwards"] += 1


def _post(module, args, output):
    if not torch.compiler.is_compiling():
        DEPTH[0] = max(0, DEPTH[0] - 1)


def install(ctx) -> None:
    nn_module.register_module_forward_pre_hook(_pre)
    nn_module.register_module_forward_hook(_post, always_call=True)


def report(ctx) -> dict:
    return dict(S)
