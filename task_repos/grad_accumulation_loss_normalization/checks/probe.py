"""grad_accumulation_loss_normalization's probe in the kit driver: global hooks, installed before agent
code is imported, record the rows of each top-level training forward and the forwards before each step."""

import torch
import torch.nn.modules.module as nn_module
from torch.optim.optimizer import register_optimizer_step_post_hook

S = {"forward_rows": [], "forwards_at_step": []}
_children: set = set()
_seen: set = set()


def _pre(module, args):
    if id(module) not in _seen:  # top-level: not a submodule of a module seen before
        _seen.add(id(module))
        _children.update(id(m) for m in module.modules() if m is not module)


def _post(module, args, output):
    top = id(module) not in _children and next(module.parameters(), None) is not None
    tensor = isinstance(output, torch.Tensor) and output.dim() > 0
    if top and tensor and module.training and torch.is_grad_enabled():
        S["forward_rows"].append(int(output.shape[0]))


def install(ctx) -> None:
    nn_module.register_module_forward_pre_hook(_pre)
    nn_module.register_module_forward_hook(_post)
    register_optimizer_step_post_hook(lambda *_: S["forwards_at_step"].append(len(S["forward_rows"])))


def report(ctx) -> dict:
    return {k: list(v) for k, v in S.items()}
