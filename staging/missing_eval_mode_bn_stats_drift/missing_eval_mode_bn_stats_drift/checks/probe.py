"""The family's probe in the kit driver: rows each BatchNorm / dropout layer saw in training and in eval
mode (a global forward hook, installed before agent code is imported)."""

import torch.nn.modules.module as nn_module
from torch import nn

S = {"bn_train_rows": 0, "bn_eval_rows": 0, "dropout_train_rows": 0, "dropout_eval_rows": 0}
KINDS = ((nn.modules.batchnorm._BatchNorm, "bn"), (nn.modules.dropout._DropoutNd, "dropout"))


def _post(module, args, output):
    for cls, kind in KINDS:
        if isinstance(module, cls):
            x = args[0] if args else None
            rows = int(x.shape[0]) if getattr(x, "dim", lambda: 0)() > 0 else 0
            S[f"{kind}_{'train' if module.training else 'eval'}_rows"] += rows


def install(ctx) -> None:
    nn_module.register_module_forward_hook(_post)


def report(ctx) -> dict:
    return dict(S)
