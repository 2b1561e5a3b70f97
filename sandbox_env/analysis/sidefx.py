"""What a behavioural check run in one process, at one world size, cannot tell from a fix:
side effects that outlive the code making them, hand-written exchanges tied to two ranks, work
replicated on every rank, and writes to the autograd graph's metadata (where probes tag graphs).

- ``process_wide``: a global module / optimizer hook registered (``register_module_*``),
  grad mode switched by a model's ``train`` / ``eval`` or at import, a mode or saved-tensor
  hooks context entered (``X(...).__enter__()``) and never left.
- ``probe_wipe``: ``grad_fn.metadata`` read or written by workspace code.
- ``world_specific_p2p``: point-to-point sends / receives whose peer is not computed from the
  world size (``rank ^ 1``, ``1 - rank``, a constant other than the root 0).
- ``replicated_loader``: a loader or sampler built for one replica (``world_size`` 1) or once
  per rank (the rank a comprehension / loop variable), so every rank reads every shard.
"""

from __future__ import annotations

import ast

from .workspace import Module

GRAD_MODE = {"set_grad_enabled", "_set_grad_enabled"}
MODE_PUSH = {"_push_mode", "_push_on_torch_function_stack", "_push_on_torch_dispatch_stack"}
P2P = {"send", "recv", "isend", "irecv"}


def _last(mod: Module, call: ast.Call) -> str:
    return mod.dotted(call.func).rsplit(".", 1)[-1] or getattr(call.func, "attr", "")


def process_wide(mods: list[Module]) -> str | None:
    """``process_wide_hook`` | ``process_wide_grad_mode`` | ``process_wide_mode`` | None."""
    for mod in mods:
        for call in mod.of(ast.Call):
            name = _last(mod, call)
            if name.startswith("register_module_") or name.startswith("register_optimizer_step_"):
                return "process_wide_hook"
            if name in MODE_PUSH or (name == "__enter__" and isinstance(call.func, ast.Attribute)
                                     and isinstance(call.func.value, ast.Call)):
                return "process_wide_mode"
        scopes = [mod.tree.body] + [fn.body for cls in mod.of(ast.ClassDef) for fn in cls.body
                                    if isinstance(fn, ast.FunctionDef) and fn.name in ("train", "eval")]
        for body in scopes:
            for st in body:
                for node in ([st] if body is mod.tree.body else ast.walk(st)):
                    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) \
                            and _last(mod, node.value) in GRAD_MODE:
                        return "process_wide_grad_mode"
    return None


def probe_wipe(mods: list[Module]) -> bool:
    return any(n.attr == "metadata" and "grad_fn" in ast.unparse(n.value)
               for mod in mods for n in mod.of(ast.Attribute))


def _general(expr: ast.AST, defs: dict[str, list[ast.AST]], depth: int = 0) -> bool:
    """Does a peer expression follow the world size (or name the root, rank 0)?"""
    if isinstance(expr, ast.Constant):
        return expr.value == 0
    text = ast.unparse(expr)
    if "world" in text.lower():
        return True
    names = [n.id for n in ast.walk(expr) if isinstance(n, ast.Name) and n.id in defs]
    return depth < 3 and bool(names) and all(
        any(_general(d, defs, depth + 1) for d in defs[n]) for n in names)


def _defs(fn: ast.AST) -> dict[str, list[ast.AST]]:
    """Name -> the expressions it is bound to in ``fn`` (assignments, tuple unpacking, loops)."""
    out: dict[str, list[ast.AST]] = {}
    for node in ast.walk(fn):
        pairs: list[tuple[ast.AST, ast.AST]] = []
        if isinstance(node, ast.Assign):
            pairs = [(t, node.value) for t in node.targets]
        elif isinstance(node, (ast.For, ast.comprehension)):
            pairs = [(node.target, node.iter)]
        for target, value in pairs:
            if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) \
                    and len(target.elts) == len(value.elts):
                pairs += list(zip(target.elts, value.elts, strict=True))
            elif isinstance(target, ast.Name):
                out.setdefault(target.id, []).append(value)
    return out


def world_specific_p2p(mods: list[Module]) -> bool:
    for mod in mods:
        for fn in [mod.tree, *mod.of(ast.FunctionDef)]:
            defs = _defs(fn)
            for call in (n for n in ast.walk(fn) if isinstance(n, ast.Call)):
                name = _last(mod, call)
                if name == "P2POp":
                    peer = call.args[2] if len(call.args) > 2 else next(
                        (k.value for k in call.keywords if k.arg in ("peer", "group_peer")), None)
                elif name in P2P and mod.dotted(call.func).startswith("torch.distributed"):
                    peer = call.args[1] if len(call.args) > 1 else next(
                        (k.value for k in call.keywords if k.arg in ("dst", "src", "group_dst", "group_src")),
                        None)
                else:
                    continue
                if peer is not None and not _general(peer, defs):
                    return True
    return False


def replicated_loader(mods: list[Module], builders: tuple[str, ...]) -> bool:
    """``builders``: the repo's loader functions, called ``(cfg, rank, world_size)``."""
    for mod in mods:
        loop_vars = {n.id for node in mod.nodes if isinstance(node, (ast.For, ast.comprehension))
                     for n in ast.walk(node.target) if isinstance(n, ast.Name)}
        for call in mod.of(ast.Call):
            name = _last(mod, call)
            if name in builders:
                pos, kws = {1: "rank", 2: "world"}, {"rank": "rank", "world_size": "world"}
            elif name == "DistributedSampler":
                pos, kws = {1: "world", 2: "rank"}, {"num_replicas": "world", "rank": "rank"}
            else:
                continue
            args = {role: call.args[i] for i, role in pos.items() if i < len(call.args)}
            args |= {kws[k.arg]: k.value for k in call.keywords if k.arg in kws}
            world, rank = args.get("world"), args.get("rank")
            if isinstance(world, ast.Constant) and world.value == 1:
                return True
            if isinstance(rank, ast.Name) and rank.id in loop_vars and rank.id != "rank":
                return True
    return False
