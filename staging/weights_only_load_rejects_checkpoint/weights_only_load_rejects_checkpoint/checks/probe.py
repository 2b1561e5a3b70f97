"""weights_only_load_rejects_checkpoint's probe in the kit driver: how checkpoints are read.

Installed before agent code is imported: a profile hook records every ``torch.load`` called with
``weights_only=False``. The check's poisoned checkpoint, when unpickled by anything but the
weights-only unpickler (or with builtins allowlisted), calls back into ``S`` and shows here.
"""

import os
import sys

import torch

S = {"unsafe_loads": [], "payload": 0, "force_no_weights_only": False}
_LOAD_CODE = torch.serialization.load.__code__


def _profile(frame, event, arg) -> None:
    if event == "call" and frame.f_code is _LOAD_CODE and frame.f_locals.get("weights_only") is False:
        S["unsafe_loads"].append(str(frame.f_locals.get("f"))[-160:])


def install(ctx) -> None:
    sys.setprofile(_profile)


def report(ctx) -> dict:
    sys.setprofile(None)
    S["force_no_weights_only"] = os.environ.get("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "0") not in ("", "0")
    return dict(S)
