"""oom_graph_leak's probe in the kit driver: rows per train/eval forward, forward graphs alive.

Global module hooks, installed before agent code is imported, count the rows of every
top-level model forward (train mode with grad vs anything else) and pass each grad-enabled
forward's output through an identity autograd function whose node lives exactly as long as
that forward's graph (whatever code does to the graph's metadata or the output tensor), so the
number of forward graphs alive at once is measured at every forward, and a graph kept alive
shows in the peak RSS measured from outside (each node holds ballast).
"""

import weakref

import torch
import torch.nn.modules.module as nn_module

BALLAST = 3 << 20  # bytes each tag holds: a graph kept alive costs memory seen from outside


class _Tag(torch.autograd.Function):
    """Identity; its backward node (``ctx``, alive exactly as long as the node) holds ballast, so a
    graph kept alive shows in the peak RSS the check measures from outside the process."""

    @staticmethod
    def forward(ctx, x):
        ctx.ballast = bytearray(b"\x01") * BALLAST
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        return grad


S = {"rows_train": 0, "rows_eval": 0, "eval_rows_with_grad": 0, "max_live_train": 0, "max_live_eval": 0}
_tags: list = []
_children: set = set()
_seen: set = set()


def _live() -> int:
    _tags[:] = [t for t in _tags if t() is not None]
    return len(_tags)


def _pre(module, args):
    if id(module) not in _seen:  # top-level: not a submodule of a module seen before
        _seen.add(id(module))
        _children.update(id(m) for m in module.modules() if m is not module)


def _post(module, args, output):
    if id(module) in _children or next(module.parameters(), None) is None:
        return
    if not isinstance(output, torch.Tensor):
        return
    rows = int(output.shape[0]) if output.dim() > 0 else 1
    tagged = None
    if output.grad_fn is not None:
        tagged = _Tag.apply(output)
        _tags.append(weakref.ref(tagged.grad_fn))  # the node's Python object: dies with the node
    mode = "train" if module.training and torch.is_grad_enabled() else "eval"
    S[f"rows_{mode}"] += rows
    S[f"max_live_{mode}"] = max(S[f"max_live_{mode}"], _live())
    if mode == "eval" and output.grad_fn is not None:
        S["eval_rows_with_grad"] += rows
    return tagged


def install(ctx) -> None:
    nn_module.register_module_forward_pre_hook(_pre)
    nn_module.register_module_forward_hook(_post)


def report(ctx) -> dict:
    return {**S, "live_after_fit": _live()}
