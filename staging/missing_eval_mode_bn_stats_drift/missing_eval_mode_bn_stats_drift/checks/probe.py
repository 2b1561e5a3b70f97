"""The family's probe in the kit driver: rows each BatchNorm / dropout layer saw in training and in
eval mode (global forward hooks, installed before agent code is imported). A run whose evaluation
leaves the model alone runs them in training mode on exactly its training rows."""

import torch.nn.modules.module as nn_module
from torch import nn

S = {"bn_train_rows": 0, "bn_eval_rows": 0, "dropout_train_rows": 0, "dropout_eval_rows": 0}


def _post(module, args, output):
    if isinstance(module, nn.modules.batchnorm._BatchNorm):
        kind = "bn"
    elif isinstance(module, nn.modules.dropout._DropoutNd):
        kind = "dropout"
    else:
        return
    x = args[0] if args else None
    rows = int(x.shape[0]) if getattr(x, "dim", lambda: 0)() > 0 else 0
    S[f"{kind}_{'train' if module.training else 'eval'}_rows"] += rows


def install(ctx) -> None:
    nn_module.register_module_forward_hook(_post)


def report(ctx) -> dict:
    return dict(S)
