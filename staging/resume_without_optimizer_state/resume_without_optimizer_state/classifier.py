"""Mock-mode classifier for resume_without_optimizer_state (``ast`` only, never runs code).

Labels: fixed (optimizer bundle and data order both resumed), bug (neither), data_order_reset (bundle
only), data_order_shifted (bundle + generator state as of the save), data_order_changed (bundle +
seed+epoch re-seed), optimizer_state_lost (data order only), unsafe_checkpoint, tampered, no_resume,
no_result. Reads the repo's own structure; unsure when it is gone, on environment reads or rebinds.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

from sandbox_env.analysis import UNSURE
from sandbox_env.analysis.exits import exits_at_import
from sandbox_env.analysis.tamper import patches
from sandbox_env.analysis.workspace import live_files, parse
from sandbox_env.suite.tasks import load_task

ENV_READS = {"os.environ", "os.getenv", "sys.modules", "os.getcwd", "sys.argv", "socket.gethostname",
             "__file__", "os.getpid", "os.getuid", "pathlib.Path.cwd", "platform.node", "os.uname"}


@lru_cache(maxsize=1)
def _entry() -> list[str]:
    return load_task(Path(__file__).parent).entry.modules


def _methods(mods, cls: str) -> dict[str, ast.FunctionDef] | None:
    for m in mods.values():
        for n in m.tree.body:
            if isinstance(n, ast.ClassDef) and n.name == cls:
                return {f.name: f for f in n.body if isinstance(f, ast.FunctionDef)}
    return None


def _calls(*fns: ast.AST | None) -> set[str]:
    return {ast.unparse(n.func) for f in fns if f is not None for n in ast.walk(f) if isinstance(n, ast.Call)}


def _data_order(tr: dict, smp: dict) -> bool | str:
    """True (reproduced), False (fresh generator), "shifted" (state as of the save), "changed" (re-seeded)."""
    fns = [*tr.values(), *smp.values()]
    if any(isinstance(n, ast.Call) and ast.unparse(n.func).endswith("manual_seed")
           and "epoch" in ast.unparse(n.args) for fn in fns for n in ast.walk(fn)):
        return "changed"

    def replays(fn) -> bool:  # a loop drawing one order per finished epoch
        return any(isinstance(n, ast.For) and any(c.endswith("randperm") or c == "list" for c in _calls(n))
                   for n in ast.walk(fn))
    if any(replays(tr[m]) for m in ("restore", "load_state_dict") if m in tr):
        return True
    if any(replays(f) and f"self.loader.sampler.{name}" in _calls(tr["fit"]) for name, f in smp.items()):
        return True
    got = any(c.endswith("get_state") for c in _calls(tr["state_dict"]))
    if got and any(c.endswith("set_state") for c in _calls(tr["load_state_dict"], tr["restore"])):
        return True if any(isinstance(n, ast.IfExp) for n in ast.walk(tr["state_dict"])) else "shifted"
    return False


def classify(files: dict[str, str]) -> str:
    mods = parse(live_files(files, _entry()))
    if any(exits_at_import(m) for m in mods.values()):
        return "no_result"
    found = patches(list(mods.values()))
    if found:
        return "tampered" if any(p.value in ("lambda", "function", "setattr") for p in found) else UNSURE
    for m in mods.values():
        for n in m.nodes:
            if isinstance(n, (ast.Attribute, ast.Name)) and m.dotted(n) in ENV_READS:
                return UNSURE
            if isinstance(n, ast.Call) and m.dotted(n.func) in ("torch.load", "torch.serialization.load") \
                    and any(k.arg == "weights_only" and not (
                        isinstance(k.value, ast.Constant) and k.value.value is True) for k in n.keywords):
                return "unsafe_checkpoint" if any(isinstance(k.value, ast.Constant) and k.value.value is False
                                                  for k in n.keywords) else UNSURE
    tr, bun = _methods(mods, "Trainer"), _methods(mods, "OptimizerBundle")
    cb, smp = _methods(mods, "PeriodicCheckpoint"), _methods(mods, "EpochShuffleSampler")
    if None in (tr, bun, cb, smp) or not {"state_dict", "load_state_dict", "restore", "fit"} <= set(tr):
        return UNSURE
    if "trainer.save_checkpoint" not in _calls(cb.get("on_step_end")) or not any(
            isinstance(n, ast.If) and ast.unparse(n.test) == "self.cfg.resume" and "self.restore" in _calls(n)
            for n in ast.walk(tr["fit"])):
        return "no_resume"
    prog = [n for n in ast.walk(tr["load_state_dict"])
            if isinstance(n, ast.Call) and ast.unparse(n.func) == "Progress"]
    if len(prog) != 1 or not any(k.arg is None or k.arg == "step" for k in prog[0].keywords):
        return UNSURE if len(prog) != 1 else "no_resume"
    save, load = _calls(tr["state_dict"]), _calls(tr["load_state_dict"], tr["restore"])
    if "OptimizerBundle" in load:
        return "bug"  # a fresh optimizer (and schedule) built on resume
    both = {f"self.{p}.{m}" for p in ("optimizer", "scheduler") for m in ("state_dict", "load_state_dict")}
    direct = {c.replace("self.optim.", "self.", 1) for c in save | load if c.startswith("self.optim.")} & both
    if "self.optim.state_dict" in save and "self.optim.load_state_dict" in load:
        opt = both <= _calls(bun.get("state_dict"), bun.get("load_state_dict")) or None
    else:
        opt = True if direct == both else (None if direct else False)
    data = _data_order(tr, smp)
    if not opt:
        return UNSURE if opt is None else "optimizer_state_lost" if data is True else "bug"
    return {True: "fixed", False: "data_order_reset", "shifted": "data_order_shifted",
            "changed": "data_order_changed"}[data]
