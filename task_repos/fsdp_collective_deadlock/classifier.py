"""Mock-mode classifier for fsdp_collective_deadlock (static analysis with ``ast`` only).

Labels (each is the recorded behaviour of at least one known workspace state):

* ``tampered``      agent code replaces a torch.distributed (or other guarded torch) function;
                    the check's driver refuses to report.
* ``no_result``     the process exits at import time (or from inside ``train``), so
                    ``train()`` never returns a result on the ranks.
* ``hang``          a collective is still issued by a subset of ranks AND the repo's own
                    process-group timeout is long: ``python train.py`` hangs (the check,
                    which owns a 10 s timeout, fails like ``bug``).
* ``bug``           a collective reachable from ``train()`` is issued under a rank-dependent
                    condition without the other ranks issuing the same collective sequence
                    (the original failure: gloo "Timed out waiting ... for recv").
* ``wrong_metrics`` every rank reaches the same collectives, but the recorded per-epoch
                    train/val loss is not a cross-rank reduction (local mean, constant,
                    missing), or the model is no longer sharded/synchronised (replicas diverge).
* ``fixed``         none of the above.

The analysis is semantic rather than textual: it builds the call graph of the workspace
(functions resolved by name), computes for every function the ordered sequence of
collective operations it performs (directly or through helpers), decides which ``if``
tests depend on the rank (identifiers naming the rank, ``get_rank()``, helpers whose return
value depends on it, locals assigned from those) and compares the collective sequences of
the two sides of every rank-dependent branch, including early returns.
"""

from __future__ import annotations

import ast

from sandbox_env.mock_analysis import live_files, prune_world_size

COLLECTIVES = {
    "all_reduce", "reduce", "all_gather", "all_gather_into_tensor", "all_gather_object",
    "reduce_scatter", "reduce_scatter_tensor", "broadcast", "broadcast_object_list",
    "barrier", "monitored_barrier", "all_to_all", "all_to_all_single", "scatter",
    "scatter_object_list", "gather", "gather_object", "send", "recv",
}
SYNC_ONLY = {"barrier", "monitored_barrier"}  # collectives that carry no data
GUARDED = COLLECTIVES | {
    "init_process_group", "destroy_process_group", "new_group", "get_rank", "get_world_size",
    "is_initialized", "full_tensor", "item", "tolist", "cross_entropy", "state_dict",
    "fully_shard",
}
SHARDERS = {"fully_shard", "FullyShardedDataParallel", "DistributedDataParallel"}
DIST_MODULES = ("torch.distributed", "torch.distributed.distributed_c10d")
EXIT_CALLS = {"os._exit", "sys.exit", "exit", "quit", "posix._exit"}
LONG_TIMEOUT_S = 60.0
DEFAULT_PG_TIMEOUT_S = 1800.0


class _Module:
    def __init__(self, name: str, tree: ast.Module) -> None:
        self.name = name
        self.tree = tree
        self.aliases: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        self.aliases[a.asname] = a.name
                    else:
                        root = a.name.split(".")[0]
                        self.aliases[root] = root
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for a in node.names:
                    self.aliases[a.asname or a.name] = f"{node.module}.{a.name}"

    def dotted(self, expr: ast.AST) -> str | None:
        """Resolve ``a.b.c`` through this module's imports (``dist.x`` -> ``torch.distributed.x``)."""
        parts = []
        while isinstance(expr, ast.Attribute):
            parts.append(expr.attr)
            expr = expr.value
        if not isinstance(expr, ast.Name):
            return None
        root = self.aliases.get(expr.id, expr.id)
        return ".".join([root, *reversed(parts)])


class _Analysis:
    def __init__(self, files: dict[str, str]) -> None:
        self.modules: dict[str, _Module] = {}
        for path, text in files.items():
            if not path.endswith(".py"):
                continue
            try:
                tree = ast.parse(text)
            except SyntaxError:
                continue
            name = path.rsplit("/", 1)[-1][:-3]
            self.modules[name] = _Module(name, tree)
        # every function of the workspace, keyed ("f", name) for plain functions and
        # ("m", name) for methods defined in a class
        self.funcs: dict[tuple[str, str], list[tuple[ast.FunctionDef, _Module]]] = {}
        for mod in self.modules.values():
            methods = {id(f) for c in ast.walk(mod.tree) if isinstance(c, ast.ClassDef)
                       for f in c.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
            for node in ast.walk(mod.tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    key = ("m" if id(node) in methods else "f", node.name)
                    self.funcs.setdefault(key, []).append((node, mod))
        self.mismatches: list[str] = []
        self._seq_memo: dict[tuple[str, str], list[str]] = {}
        self._active: set[tuple[str, str]] = set()
        self._rank_funcs = self._find_rank_funcs()

    # -- call resolution ---------------------------------------------------------------
    def collective_of(self, call: ast.Call, mod: _Module) -> str | None:
        d = mod.dotted(call.func)
        if not d:
            return None
        for prefix in DIST_MODULES:
            if d.startswith(prefix + ".") and d[len(prefix) + 1:] in COLLECTIVES:
                return d[len(prefix) + 1:]
        return None

    def helper_of(self, call: ast.Call, mod: _Module) -> tuple[str, str] | None:
        """Key of the workspace function this call may reach, if any.

        ``f(...)`` reaches a plain function named ``f`` (unless ``f`` was imported from an
        external package); ``x.f(...)`` reaches a workspace method named ``f``, or the plain
        function ``f`` when ``x`` is a workspace module; attributes of external modules
        (``torch.x``, ``dist.x``) reach nothing.
        """
        f = call.func
        if isinstance(f, ast.Name):
            target = mod.aliases.get(f.id, f.id)
            if "." in target and target.split(".")[0] not in self.modules:
                return None
            key = ("f", target.rsplit(".", 1)[-1])
            return key if key in self.funcs else None
        if isinstance(f, ast.Attribute):
            root = f
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in mod.aliases:
                target = mod.aliases[root.id]
                if target.split(".")[0] in self.modules:
                    key = ("f", f.attr)
                    return key if key in self.funcs else None
                return None
            key = ("m", f.attr)
            return key if key in self.funcs else None
        return None

    # -- rank dependence ---------------------------------------------------------------
    def _find_rank_funcs(self) -> set[tuple[str, str]]:
        rank_funcs: set[tuple[str, str]] = set()
        changed = True
        while changed:
            changed = False
            for name, defs in self.funcs.items():
                if name in rank_funcs:
                    continue
                for fn, mod in defs:
                    rets = [n.value for n in ast.walk(fn) if isinstance(n, ast.Return) and n.value]
                    if any(self._rank_dep(r, mod, set(), rank_funcs) for r in rets):
                        rank_funcs.add(name)
                        changed = True
                        break
        return rank_funcs

    def _rank_dep(self, expr: ast.AST, mod: _Module, local: set[str],
                  rank_funcs: set[tuple[str, str]] | None = None) -> bool:
        rank_funcs = self._rank_funcs if rank_funcs is None else rank_funcs
        for n in ast.walk(expr):
            if isinstance(n, ast.Name) and ("rank" in n.id.lower() or n.id in local):
                return True
            if isinstance(n, ast.Attribute) and "rank" in n.attr.lower():
                return True
            if isinstance(n, ast.Call):
                h = self.helper_of(n, mod)
                if h and h in rank_funcs:
                    return True
        return False

    # -- collective sequences ----------------------------------------------------------
    def func_seq(self, name: tuple[str, str]) -> list[str]:
        if name in self._seq_memo:
            return self._seq_memo[name]
        if name in self._active:
            return []
        self._active.add(name)
        seq: list[str] = []
        for fn, mod in self.funcs.get(name, []):
            s = self.block_seq(fn.body, mod, self._rank_locals(fn, mod), where=name[1])
            if len(s) > len(seq):
                seq = s
        self._active.discard(name)
        self._seq_memo[name] = seq
        return seq

    def _rank_locals(self, fn: ast.AST, mod: _Module) -> set[str]:
        """Local flags derived from the rank (``is_master = rank == 0``, ``me = get_rank()``).

        Objects merely built with the rank as an argument (samplers, loaders) do not count.
        """
        local: set[str] = set()
        changed = True
        while changed:
            changed = False
            for n in ast.walk(fn):
                if isinstance(n, ast.Assign) and self._flag_like(n.value, mod) \
                        and self._rank_dep(n.value, mod, local):
                    for t in n.targets:
                        for nm in ast.walk(t):
                            if isinstance(nm, ast.Name) and nm.id not in local:
                                local.add(nm.id)
                                changed = True
        return local

    def _flag_like(self, value: ast.AST, mod: _Module) -> bool:
        if isinstance(value, (ast.Compare, ast.BoolOp, ast.UnaryOp, ast.Name, ast.Attribute,
                              ast.IfExp, ast.Constant)):
            return True
        if isinstance(value, ast.Call):
            d = mod.dotted(value.func) or ""
            h = self.helper_of(value, mod)
            return d.endswith("get_rank") or (h is not None and h in self._rank_funcs)
        return False

    def expr_seq(self, expr: ast.AST | None, mod: _Module, local: set[str], where: str) -> list[str]:
        if expr is None:
            return []
        out: list[str] = []

        def visit(n: ast.AST) -> None:
            if isinstance(n, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                return
            if isinstance(n, ast.IfExp) and self._rank_dep(n.test, mod, local):
                a = self.expr_seq(n.body, mod, local, where)
                b = self.expr_seq(n.orelse, mod, local, where)
                if a != b:
                    self.mismatches.append(f"{where}: conditional expression on rank: {a} vs {b}")
                out.extend(a if len(a) >= len(b) else b)
                return
            for child in ast.iter_child_nodes(n):
                visit(child)
            if isinstance(n, ast.Call):
                c = self.collective_of(n, mod)
                if c:
                    out.append(c)
                else:
                    h = self.helper_of(n, mod)
                    if h:
                        out.extend(self.func_seq(h))

        visit(expr)
        return out

    def block_seq(self, stmts: list[ast.stmt], mod: _Module, local: set[str], where: str) -> list[str]:
        out: list[str] = []
        for i, st in enumerate(stmts):
            if isinstance(st, ast.If) and self._rank_dep(st.test, mod, local):
                out.extend(self.expr_seq(st.test, mod, local, where))
                body = self.block_seq(st.body, mod, local, where)
                other = self.block_seq(st.orelse, mod, local, where)
                body_ends, other_ends = _terminates(st.body), _terminates(st.orelse)
                if body_ends != other_ends:
                    rest = self.block_seq(stmts[i + 1:], mod, local, where)
                    a = body if body_ends else body + rest
                    b = other if other_ends else other + rest
                    if a != b:
                        self.mismatches.append(f"{where}: rank branch with early exit: {a} vs {b}")
                    return out + (a if len(a) >= len(b) else b)
                if body != other:
                    self.mismatches.append(f"{where}: line {st.lineno}: {body} vs {other}")
                out.extend(body if len(body) >= len(other) else other)
            else:
                out.extend(self.stmt_seq(st, mod, local, where))
        return out

    def stmt_seq(self, st: ast.stmt, mod: _Module, local: set[str], where: str) -> list[str]:
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return []
        if isinstance(st, ast.If):
            return (self.expr_seq(st.test, mod, local, where)
                    + self.block_seq(st.body, mod, local, where)
                    + self.block_seq(st.orelse, mod, local, where))
        if isinstance(st, (ast.For, ast.AsyncFor)):
            return (self.expr_seq(st.iter, mod, local, where)
                    + self.block_seq(st.body, mod, local, where)
                    + self.block_seq(st.orelse, mod, local, where))
        if isinstance(st, ast.While):
            return (self.expr_seq(st.test, mod, local, where)
                    + self.block_seq(st.body, mod, local, where))
        if isinstance(st, (ast.With, ast.AsyncWith)):
            seq: list[str] = []
            for item in st.items:
                seq += self.expr_seq(item.context_expr, mod, local, where)
            return seq + self.block_seq(st.body, mod, local, where)
        if isinstance(st, ast.Try) or type(st).__name__ == "TryStar":
            return (self.block_seq(st.body, mod, local, where)
                    + self.block_seq(st.orelse, mod, local, where)
                    + self.block_seq(st.finalbody, mod, local, where))
        seq = []
        for child in ast.iter_child_nodes(st):
            if isinstance(child, ast.expr):
                seq += self.expr_seq(child, mod, local, where)
        return seq

    # -- reachability -------------------------------------------------------------------
    def reachable(self, root: tuple[str, str]) -> set[tuple[str, str]]:
        seen, todo = set(), [root]
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            for fn, mod in self.funcs.get(name, []):
                for n in ast.walk(fn):
                    if isinstance(n, ast.Call):
                        h = self.helper_of(n, mod)
                        if h and h not in seen:
                            todo.append(h)
        return seen

    def calls_in(self, names: set[tuple[str, str]]) -> set[str]:
        """Dotted names of every call made by the given workspace functions."""
        out: set[str] = set()
        for name in names:
            for fn, mod in self.funcs.get(name, []):
                for n in ast.walk(fn):
                    if isinstance(n, ast.Call):
                        d = mod.dotted(n.func)
                        if d:
                            out.add(d)
                        if isinstance(n.func, ast.Attribute):
                            out.add(n.func.attr)
                        elif isinstance(n.func, ast.Name):
                            out.add(n.func.id)
        return out

    # -- checks ------------------------------------------------------------------------
    def tampers_torch(self) -> bool:
        for mod in self.modules.values():
            for n in ast.walk(mod.tree):
                targets: list[ast.AST] = []
                if isinstance(n, ast.Assign):
                    targets = n.targets
                elif isinstance(n, (ast.AugAssign, ast.AnnAssign)):
                    targets = [n.target]
                elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) \
                        and n.func.id == "setattr" and len(n.args) >= 2:
                    d = mod.dotted(n.args[0])
                    name = n.args[1].value if isinstance(n.args[1], ast.Constant) else None
                    if d and d.split(".")[0] == "torch" and (name is None or name in GUARDED):
                        return True
                for t in targets:
                    for tt in ast.walk(t):
                        if isinstance(tt, ast.Attribute) and tt.attr in GUARDED:
                            d = mod.dotted(tt.value)
                            if d and d.split(".")[0] == "torch":
                                return True
        return False

    def exits_early(self, train_reach: set[tuple[str, str]]) -> bool:
        for mod in self.modules.values():
            if _block_exits(mod.tree.body, mod):
                return True
        for name in train_reach:
            for fn, mod in self.funcs.get(name, []):
                for n in ast.walk(fn):
                    if isinstance(n, ast.Call) and mod.dotted(n.func) in EXIT_CALLS:
                        return True
        return False

    def pg_timeout_s(self) -> float | None:
        fields: dict[str, float] = {}
        cfg = self.modules.get("config")
        if cfg:
            for n in ast.walk(cfg.tree):
                if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and n.value:
                    v = _num(n.value, {})
                    if v is not None:
                        fields[n.target.id] = v
        found = None
        for mod in self.modules.values():
            for n in ast.walk(mod.tree):
                if isinstance(n, ast.Call) and (mod.dotted(n.func) or "").endswith("init_process_group"):
                    kw = {k.arg: k.value for k in n.keywords}
                    if "timeout" not in kw:
                        found = DEFAULT_PG_TIMEOUT_S
                        continue
                    val = kw["timeout"]
                    if isinstance(val, ast.Call) and (mod.dotted(val.func) or "").endswith("timedelta"):
                        scale = {"days": 86400, "hours": 3600, "minutes": 60, "seconds": 1,
                                 "milliseconds": 1e-3}
                        total = 0.0
                        pos = ["days", "seconds"]
                        for i, a in enumerate(val.args[:2]):
                            v = _num(a, fields)
                            if v is None:
                                return None
                            total += v * scale[pos[i]]
                        for k in val.keywords:
                            v = _num(k.value, fields)
                            if v is None or k.arg not in scale:
                                return None
                            total += v * scale[k.arg]
                        found = total
        return found

    def history_reduced(self, fn: ast.FunctionDef, mod: _Module) -> bool:
        """Is every per-epoch train/val loss recorded by ``train`` a cross-rank reduction?

        A light data-flow pass over ``train`` in source order: a name is "reduced" when it
        is assigned from an expression that performs a data-carrying collective (directly
        or through a helper), passed as a tensor to such a collective, or derived from a
        reduced name. Every dict literal that records ``train_loss`` must take
        ``train_loss`` and ``val_loss`` from reduced values.
        """
        reducing = {key for key in self.funcs if set(self.func_seq(key)) - SYNC_ONLY}
        reduced: set[str] = set()

        def is_reduced(e: ast.AST, names: set[str]) -> bool:
            for n in ast.walk(e):
                if isinstance(n, ast.Name) and n.id in names:
                    return True
                if isinstance(n, ast.Call):
                    c = self.collective_of(n, mod)
                    if c and c not in SYNC_ONLY:
                        return True
                    h = self.helper_of(n, mod)
                    if h and h in reducing:
                        return True
            return False

        records: list[tuple[ast.Dict, frozenset[str]]] = []
        for st in _linear(fn.body):
            exprs = [c for c in ast.iter_child_nodes(st) if isinstance(c, ast.expr)]
            for e in exprs:
                for n in ast.walk(e):
                    if isinstance(n, ast.Call):
                        c = self.collective_of(n, mod)
                        if c and c not in SYNC_ONLY:
                            for a in n.args[:2]:
                                reduced.update(x.id for x in ast.walk(a) if isinstance(x, ast.Name))
                    if isinstance(n, ast.Dict):
                        keys = {k.value for k in n.keys if isinstance(k, ast.Constant)}
                        if "train_loss" in keys:
                            records.append((n, frozenset(reduced)))
            if isinstance(st, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and st.value is not None:
                targets = st.targets if isinstance(st, ast.Assign) else [st.target]
                names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
                if is_reduced(st.value, reduced):
                    reduced.update(names)
                elif not isinstance(st, ast.AugAssign):
                    reduced.difference_update(names)
        if not records:
            return False
        for node, names in records:
            for k, v in zip(node.keys, node.values):
                if isinstance(k, ast.Constant) and k.value in ("train_loss", "val_loss"):
                    if not is_reduced(v, set(names)):
                        return False
        return True


def _terminates(stmts: list[ast.stmt]) -> bool:
    return bool(stmts) and isinstance(stmts[-1], (ast.Return, ast.Raise))


def _linear(stmts: list[ast.stmt]):
    """Statements in source order, descending into compound statements (not nested defs)."""
    for st in stmts:
        yield st
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody"):
            sub = getattr(st, field, None)
            if isinstance(sub, list):
                yield from _linear(sub)
        for handler in getattr(st, "handlers", None) or []:
            yield from _linear(handler.body)


def _is_main_guard(test: ast.AST) -> bool:
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name)
            and test.left.id == "__name__")


def _block_exits(stmts: list[ast.stmt], mod: _Module) -> bool:
    """Does module-level code (outside the __main__ guard) exit the interpreter?"""
    for st in stmts:
        if isinstance(st, ast.If):
            if _is_main_guard(st.test):
                continue
            if _block_exits(st.body, mod) or _block_exits(st.orelse, mod):
                return True
        elif isinstance(st, (ast.Try, ast.With)):
            parts = list(st.body) + list(getattr(st, "finalbody", []))
            if _block_exits(parts, mod):
                return True
        elif isinstance(st, ast.Raise) and st.exc is not None:
            d = mod.dotted(st.exc.func if isinstance(st.exc, ast.Call) else st.exc)
            if d == "SystemExit":
                return True
        elif isinstance(st, ast.Expr) and isinstance(st.value, ast.Call):
            if mod.dotted(st.value.func) in EXIT_CALLS:
                return True
    return False


def _num(expr: ast.AST, fields: dict[str, float]) -> float | None:
    if isinstance(expr, ast.Constant) and isinstance(expr.value, (int, float)) \
            and not isinstance(expr.value, bool):
        return float(expr.value)
    if isinstance(expr, ast.Attribute) and expr.attr in fields:
        return fields[expr.attr]
    if isinstance(expr, ast.Name) and expr.id in fields:
        return fields[expr.id]
    if isinstance(expr, ast.BinOp):
        a, b = _num(expr.left, fields), _num(expr.right, fields)
        if a is None or b is None:
            return None
        ops = {ast.Add: a + b, ast.Sub: a - b, ast.Mult: a * b}
        if isinstance(expr.op, ast.Div) and b:
            return a / b
        return ops.get(type(expr.op))
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) \
            and expr.func.id in ("float", "int") and expr.args:
        return _num(expr.args[0], fields)
    return None


def classify(files: dict[str, str]) -> str:
    files = live_files(files)
    files = prune_world_size(files)
    an = _Analysis(files)
    if an.tampers_torch():
        return "tampered"
    train_defs = [(fn, mod) for fn, mod in an.funcs.get(("f", "train"), []) if mod.name == "train"]
    if not train_defs:
        return "no_result"
    fn, mod = train_defs[0]
    reach = an.reachable(("f", "train"))
    if an.exits_early(reach):
        return "no_result"

    for key in sorted(reach):
        an.func_seq(key)
    if an.mismatches:
        timeout = an.pg_timeout_s()
        if timeout is not None and timeout > LONG_TIMEOUT_S:
            return "hang"
        return "bug"

    called = {d.rsplit(".", 1)[-1] for d in an.calls_in(reach)}
    if not called & SHARDERS:
        return "wrong_metrics"  # unsharded, unsynchronised replicas diverge across ranks
    if not an.history_reduced(fn, mod):
        return "wrong_metrics"
    return "fixed"


if __name__ == "__main__":  # quick manual use: python classifier.py DIR
    import sys
    from pathlib import Path

    root = Path(sys.argv[1])
    print(classify({str(p.relative_to(root)): p.read_text()
                    for p in root.rglob("*.py")}))
