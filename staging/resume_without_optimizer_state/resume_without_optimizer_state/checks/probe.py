"""resume_without_optimizer_state's probe in the kit driver: pre-emption, steps, checkpoint loads.

Installed before agent code is imported. A global optimizer-step hook counts the optimisation
steps the process runs; when the check passes a pre-emption step K (as the verification's
``secret``, an integer >= 1, in the pre-empted run only) the process is killed with SIGKILL right
after its K-th step, as a pre-empted worker dies: no handler, no final checkpoint (a marker report
is written first). A profile hook records every ``torch.load`` called with ``weights_only=False``;
after training every torch/pickle file under the run directory (and directories the config names)
is loaded with the original ``torch.load(..., weights_only=True)``.
"""

import dataclasses
import json
import os
import signal
import sys

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook

S = {"optimizer_steps": 0, "unsafe_loads": [], "unsafe_files": [], "checkpoint_files": 0}
_load, _kill, _pid, _replace, _dumps = torch.load, os.kill, os.getpid, os.replace, json.dumps
_LOAD_CODE = torch.serialization.load.__code__
_ctx: dict = {}
_preempt_at = 0


def _step_hook(optimizer, args, kwargs) -> None:
    S["optimizer_steps"] += 1
    if _preempt_at and S["optimizer_steps"] >= _preempt_at:
        path = os.path.join(_ctx["spec"]["out"], "rank0.json")
        with open(path + ".tmp", "w") as fh:
            fh.write(_dumps({"rank": None, "error": None, "tampered": [],
                             "preempted": S["optimizer_steps"], "probe": dict(S)}))
        _replace(path + ".tmp", path)
        sys.stdout.flush()
        sys.stderr.flush()
        _kill(_pid(), signal.SIGKILL)


def _profile(frame, event, arg) -> None:
    if event == "call" and frame.f_code is _LOAD_CODE and frame.f_locals.get("weights_only") is False:
        S["unsafe_loads"].append(str(frame.f_locals.get("f"))[-160:])


def install(ctx) -> None:
    global _preempt_at
    _ctx.update(ctx)
    secret = ctx["spec"].get("secret") or 0
    _preempt_at = int(secret) if secret >= 1 else 0
    register_optimizer_step_post_hook(_step_hook)
    sys.setprofile(_profile)


def _candidates(roots: list[str]):
    seen = set()
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if d not in (".git", "__pycache__")]
            for name in filenames:
                p = os.path.realpath(os.path.join(dirpath, name))
                if p in seen or not os.path.isfile(p) or os.path.getsize(p) > 64 << 20:
                    continue
                seen.add(p)
                with open(p, "rb") as fh:
                    head = fh.read(4)
                if head.startswith(b"PK\x03\x04") or head[:1] == b"\x80":
                    yield p


def report(ctx) -> dict:
    sys.setprofile(None)
    roots = [os.getcwd()]
    cfg = ctx.get("cfg")
    if dataclasses.is_dataclass(cfg):
        for f in dataclasses.fields(cfg):
            v = getattr(cfg, f.name, None)
            if isinstance(v, str) and os.path.isabs(v) and os.path.isdir(v):
                roots.append(v)
    for p in _candidates(roots):
        try:
            _load(p, map_location="cpu", weights_only=True)
            S["checkpoint_files"] += 1
        except Exception as exc:  # noqa: BLE001 - any failure is the finding
            S["unsafe_files"].append(f"{os.path.relpath(p)}: {type(exc).__name__}: {str(exc).splitlines()[0][:160]}")
    return dict(S)
