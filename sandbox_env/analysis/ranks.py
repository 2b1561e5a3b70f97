"""Which ranks reach which collective, and where each value comes from (distributed training).

``rank_runs`` runs a function of the workspace symbolically once per rank (2 ranks, as the
check launches them), following helpers, methods, properties and ``@contextmanager``
generators (entered at the ``with``, resumed when it is left) in any workspace file, the
attributes of objects helpers return, and module-level literal constants (also imported ones:
an environment read folded to a constant), and deciding ``if`` tests that depend on the rank
(``rank == 0``, ``is_main_process()``, locals and helper results derived from them; a name
holds the rank if it says ``rank``, not ``ranks``). Each run yields the ordered sequence of collectives
that rank issues (model forward/backward of a sharded model count as collectives: ``fsdp``),
what it feeds each data-carrying collective, and where the values of the records it builds
come from: ``G`` a cross-rank reduction (all_reduce SUM, reduce to this rank, all_gather ...),
``N`` rank-local data or a constant, ``S`` a global count, ``U`` not understood, and ``L`` the
value of one iteration only of a loop over data (the last batch's loss read after the loop,
not accumulated over it). Two ranks whose sequences differ deadlock (or time out) at the first
difference.
"""

from __future__ import annotations

import ast
import builtins
import re

from . import folding
from .exits import EXIT_CALLS
from .workspace import Module, binding_counts, parse

COLLECTIVES = {
    "all_reduce", "reduce", "all_gather", "all_gather_into_tensor", "all_gather_object",
    "reduce_scatter", "reduce_scatter_tensor", "broadcast", "broadcast_object_list",
    "barrier", "monitored_barrier", "all_to_all", "all_to_all_single", "scatter",
    "scatter_object_list", "gather", "gather_object", "send", "recv", "new_group",
}
DIST = ("torch.distributed.", "torch.distributed.distributed_c10d.")
PURE_BUILTINS = {"int", "float", "bool", "str", "abs", "min", "max", "round", "len", "sum"}
UNSURE_PREFIXES = ("threading.", "concurrent.", "multiprocessing.", "subprocess.", "importlib.", "inspect.")
WORLD, BUDGET = 2, 20000
DEFAULT_PG_TIMEOUT_S = 1800.0  # torch's default process-group timeout
_U = object()  # an unknown value
_UNKNOWN = ((_U, False), frozenset())  # (rank value, taint) of something rank-independent
_RANK = re.compile(r"rank(?!s)")  # ``rank``, ``local_rank``, ``is_rank0``; not ``nranks`` / ``ALL_RANKS``


def is_rank_name(name: str) -> bool:
    """Does a name hold this process's rank (``ranks`` in the plural: a count or set of ranks)?"""
    return bool(_RANK.search(name.lower()))


def collective_name(dotted: str | None) -> str | None:
    """``torch.distributed.all_reduce`` -> ``all_reduce`` (None for anything else)."""
    for p in DIST:
        if dotted and dotted.startswith(p) and dotted[len(p):] in COLLECTIVES:
            return dotted[len(p):]
    return None


def _key(e: ast.AST) -> str | None:
    """``a`` / ``a.b.c`` as an environment key."""
    if isinstance(e, ast.Name):
        return e.id
    if isinstance(e, ast.Attribute):
        base = _key(e.value)
        return base and f"{base}.{e.attr}"
    return None


class _Frame:
    def __init__(self) -> None:
        self.rets: list[tuple] = []
        self.inplace: set[str] = set()
        self.attrs: list[dict] = []  # per return: the attributes of the object it returns


class RankRun:
    """One rank's symbolic run: ``seq`` of collectives, rank-0 history ``records``, ``flags``.

    Reusable for other tasks: construct with the workspace's modules and functions, call
    ``run_function(key, {param: (value, taint)})`` for rank ``r``, then compare ``seq`` across
    ranks: every collective reached by one rank only shows up as a difference.
    """

    def __init__(self, an: Analysis, r: int) -> None:
        self.an, self.r = an, r
        self.seq: list = []
        self.sent: list[frozenset] = []  # what this rank feeds each data-carrying collective
        self.records: list[dict[str, frozenset]] = []
        self.flags: set[str] = set()
        self.stack: list[tuple[str, str]] = []
        self.frames: list[_Frame] = []
        self.steps = 0
        self.returned: tuple[int, dict] = (0, {})  # (id of a call, attributes of what it returned)

    # -- values: (rank value, taint) with rank value = (concrete or _U, depends on the rank) --
    def ev(self, e: ast.AST | None, env: dict, mod: Module) -> tuple[tuple, frozenset]:
        self.steps += 1
        if self.steps > BUDGET:
            self.flags.add("unsure: analysis budget")
            return (_U, False), frozenset("U")
        if e is None:
            return (None, False), frozenset()
        if isinstance(e, ast.Constant):
            return (e.value, False), frozenset()
        if isinstance(e, (ast.Name, ast.Attribute)) and not (isinstance(e, ast.Attribute) and e.attr in
                                                             self.an.global_attrs):
            k = _key(e)
            if k in env:
                return env[k]
            const = self.an.constant(e, mod)
            if const is not None:
                return (const[0], False), frozenset()
            name = e.id if isinstance(e, ast.Name) else e.attr
            if isinstance(e, ast.Attribute):
                prop = self.an.funcs.get(("m", name))
                if prop and any(_is_property(f) for f, _ in prop):
                    return self.invoke(("m", name), [], {}, env, mod, recv=e.value)
                base = self.ev(e.value, env, mod)
                if is_rank_name(name) or name in self.an.rank_attrs:
                    return ((self.r if is_rank_name(name) else _U), True), base[1] | {"N"}
                return ((WORLD if name == "world_size" else _U), base[0][1]), base[1]
            if is_rank_name(name):
                return (self.r, True), frozenset("N")
            return ((WORLD if name == "world_size" else _U), False), frozenset()
        if isinstance(e, ast.Call):
            return self.call(e, env, mod)
        if isinstance(e, ast.BoolOp):  # short-circuits like Python: later operands may not run
            dep, taint, vals = False, frozenset(), []
            for v in e.values:
                (val, d), t = self.ev(v, env, mod)
                dep, taint = dep or d, taint | t
                if val is not _U and bool(val) == isinstance(e.op, ast.Or):
                    return (val, dep), taint
                vals.append(val)
            return ((_U if _U in vals else vals[-1]), dep), taint
        if isinstance(e, ast.IfExp):
            (tv, td), tt = self.ev(e.test, env, mod)
            if tv is not _U:
                return self.ev(e.body if tv else e.orelse, env, mod)
            a, sa = self._sub(self.ev, e.body, env, mod)
            b, sb = self._sub(self.ev, e.orelse, env, mod)
            self._branch(e.lineno, td, sa, sb)
            return (_U, td or a[0][1] or b[0][1]), a[1] | b[1] | tt
        if isinstance(e, ast.Dict):
            vals = [self.ev(v, env, mod) for v in e.values]
            keys = [k.value if isinstance(k, ast.Constant) else None for k in e.keys]
            self._record(dict(zip(keys, vals, strict=False)))
            return (_U, any(v[0][1] for v in vals)), frozenset().union(*(t for _, t in vals))
        if isinstance(e, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            inner = dict(env)
            for g in e.generators:
                self._assign(g.target, self.ev(g.iter, inner, mod), inner)
            parts = [e.key, e.value] if isinstance(e, ast.DictComp) else [e.elt]
            vals = [self.ev(p, inner, mod) for p in parts]
            return (_U, any(v[0][1] for v in vals)), frozenset().union(*(t for _, t in vals))
        if isinstance(e, ast.NamedExpr):
            v = self.ev(e.value, env, mod)
            self._assign(e.target, v, env)
            return v
        if isinstance(e, ast.Lambda):
            return (_U, False), frozenset()
        if isinstance(e, ast.Attribute) and e.attr in self.an.global_attrs:
            return (_U, False), frozenset("S")
        kids = [self.ev(c, env, mod) for c in ast.iter_child_nodes(e) if isinstance(c, ast.expr)]
        taint = _union(*(k[1] for k in kids))
        if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Mult) and taint == {"N"} \
                and "world_size" in ast.unparse(e):
            taint = frozenset("S")  # a per-rank count times the world size (equal shards)
        return (_fold(e, [k[0][0] for k in kids]), any(k[0][1] for k in kids)), taint

    def _sub(self, fn, *args):
        """``fn(*args)`` and the collectives it issued, kept out of the current sequence."""
        saved, self.seq = self.seq, []
        try:
            return fn(*args), self.seq
        finally:
            self.seq = saved

    def _branch(self, line: int, rank_dep: bool, sa: list, sb: list) -> None:
        if sa == sb:
            self.seq += sa
            return
        if rank_dep:
            self.flags.add(f"mismatch: line {line}: rank-dependent branch {sa} vs {sb}")
        self.seq.append(("if", line, tuple(sa), tuple(sb)))

    def _record(self, rec: dict) -> None:
        """A history entry built on rank 0: its values' taints (``samples#``: the count's value)."""
        if self.r == 0 and self.an.record_key in rec:
            self.records.append({**{k: _settled(t, keep=False) for k, (_, t) in rec.items()},
                                 "samples#": rec.get(self.an.count_key, ((None, False), None))[0][0]})

    def call(self, e: ast.Call, env: dict, mod: Module) -> tuple[tuple, frozenset]:
        d = mod.dotted(e.func) or ""
        tail = d.rsplit(".", 1)[-1]
        if d in EXIT_CALLS:
            self.flags.add("exit")
        if tail in ("fully_shard", "FullyShardedDataParallel", "DistributedDataParallel"):
            self.flags.add(f"wraps: {tail}")
        if d.startswith(UNSURE_PREFIXES) or d in ("exec", "eval") or tail == "spawn" or (
                d in ("getattr", "setattr") and e.args and (mod.dotted(e.args[0]) or "").startswith("torch")):
            self.flags.add(f"unsure: {d}()")
        args = [self.ev(a, env, mod) for a in e.args]
        kw = {k.arg: self.ev(k.value, env, mod) for k in e.keywords}
        recv = self.ev(e.func.value, env, mod) if isinstance(e.func, ast.Attribute) else _UNKNOWN
        taint = _union(recv[1], *(t for _, t in args), *(t for _, t in kw.values()))
        dep = any(v[0][1] for v in [*args, *kw.values()])
        coll = collective_name(d)
        if coll:
            self.seq.append(coll)
            self._collective(coll, e, args, kw, env)
            return (_U, False), frozenset()
        if tail == "get_rank" and d.startswith("torch"):
            return (self.r, True), frozenset("N")
        if tail == "get_world_size" and d.startswith("torch"):
            return (WORLD, False), frozenset()
        if tail in ("is_initialized", "is_available") and d.startswith("torch"):
            return (True, False), frozenset()
        helper = self.an.helper_of(e, mod)
        if helper:
            recv = e.func.value if isinstance(e.func, ast.Attribute) and helper[0] == "m" else None
            kws = {k.arg: k.value for k in e.keywords if k.arg}
            out = self.invoke(helper, e.args, kws, env, mod, recv=recv)
            self.returned = (id(e), self.returned[1])
            return out
        called = (_key(e.func) or "").split(".")[-1] if isinstance(e.func, (ast.Name, ast.Attribute)) else ""
        if tail in ("backward", "full_tensor") or called in self.an.model_names:
            self.seq.append("fsdp")
        if d in PURE_BUILTINS and all(a[0][0] is not _U for a in args) and not kw:
            try:
                return (getattr(builtins, d)(*(a[0][0] for a in args)), dep), taint
            except Exception:
                pass
        if d == "dict" and kw:
            self._record(kw)
        return (_U, dep if d in PURE_BUILTINS else False), taint

    def _collective(self, coll: str, e: ast.Call, args: list, kw: dict, env: dict) -> None:
        group = kw.get("group")
        if group is not None and group[0][0] is not None and "WORLD" not in ast.unparse(e):
            self.flags.add("unsure: collective on a sub-group")

        def arg(i: int, name: str):
            node = e.args[i] if len(e.args) > i else next((k.value for k in e.keywords if k.arg == name),
                                                          None)
            val = args[i] if len(e.args) > i else kw.get(name)
            return node, val

        data = {"all_reduce": 0, "reduce": 0, "all_gather": 1, "all_gather_object": 1, "gather": 0,
                "all_gather_into_tensor": 1, "gather_object": 0}.get(coll)
        # one iteration's value stays one iteration's value, reduced over the ranks or not
        once = frozenset(t for t in args[data][1] if _once(t)) if data is not None and len(args) > data \
            else frozenset()

        def mark(node, taint: frozenset) -> None:
            k = node is not None and _key(node.value if isinstance(node, ast.Subscript) else node)
            if k:
                env[k] = ((_U, False), taint | once)
                if self.frames:
                    self.frames[-1].inplace.add(k)

        if data is not None:
            self.sent.append(_settled(args[data][1], keep=False) if len(args) > data else frozenset("U"))
        if coll in ("all_reduce", "reduce"):
            op_node = arg(1 if coll == "all_reduce" else 2, "op")[0]
            op = (ast.unparse(op_node) if op_node is not None else "SUM").rsplit(".", 1)[-1]
            ok = frozenset("G") if op == "SUM" else frozenset("N") if op in (
                "MAX", "MIN", "PRODUCT", "BAND", "BOR", "BXOR") else frozenset("U")
            if coll == "reduce":
                dst = arg(1, "dst")[1]
                ok = ok if dst and dst[0][0] == self.r else frozenset("U") if self.r == 0 else frozenset("N")
            mark(arg(0, "tensor")[0], ok)
        elif coll in ("all_gather", "all_gather_object", "all_gather_into_tensor"):
            mark(arg(0, "tensor_list")[0], frozenset("G"))
        elif coll in ("gather", "gather_object"):
            dst = arg(2, "dst")[1]
            if self.r == 0:
                mark(arg(1, "gather_list")[0], frozenset("G" if dst is None or dst[0][0] == 0 else "U"))
        elif coll in ("broadcast", "broadcast_object_list"):
            src = arg(1, "src")[1]
            if not src or src[0][0] != self.r:
                mark(arg(0, "tensor")[0], frozenset("U"))
        elif coll not in ("barrier", "monitored_barrier", "new_group"):
            mark(arg(0, "output")[0], frozenset("U"))

    def _enter(self, item: ast.withitem, env: dict, mod: Module):
        """Enter one ``with`` item. A workspace ``@contextmanager`` generator runs up to its
        ``yield`` here (the ``as`` target is the yielded object, attributes included); the
        function returned runs the rest when the block is left. Anything else is evaluated once."""
        e, target = item.context_expr, item.optional_vars
        split = self._generator(e, mod)
        if split is None:
            v = self.ev(e, env, mod)
            if target is not None:
                self._assign(target, v, env)
            return None
        key, pre, yielded, post = split
        local: dict = {}
        recv = e.func.value if isinstance(e.func, ast.Attribute) and key[0] == "m" else None
        kws = {k.arg: k.value for k in e.keywords if k.arg}
        v = self.invoke(key, e.args, kws, env, mod, recv=recv, body=[*pre, ast.Return(yielded)], keep=local)
        inner, outer = yielded is not None and _key(yielded), target is not None and _key(target)
        if target is not None:
            self._assign(target, v, env)
        if inner and outer:
            env.update({outer + k[len(inner):]: x for k, x in local.items() if k.startswith(inner + ".")})
        fn, fmod = self.an.funcs[key][0]

        def leave(env: dict) -> None:
            if inner and outer:
                local.update({inner + k[len(outer):]: x for k, x in env.items()
                              if k == outer or k.startswith(outer + ".")})
            if key not in self.stack:
                self.run_body(key, fn, fmod, local, post)
            if inner and outer:
                env.update({outer + k[len(inner):]: x for k, x in local.items() if k.startswith(inner + ".")})
        return leave

    def _generator(self, e: ast.expr, mod: Module):
        """``(key, statements before the yield, yielded expression, statements after)`` of a call
        of a workspace ``@contextmanager`` function with one top-level ``yield`` (possibly in a
        ``try``); None (flagged unsure if it is such a function) otherwise."""
        helper = self.an.helper_of(e, mod) if isinstance(e, ast.Call) else None
        if helper is None:
            return None
        fn, _ = self.an.funcs[helper][0]
        if not any((getattr(d, "id", "") or getattr(d, "attr", "")).endswith("contextmanager")
                   for d in fn.decorator_list):
            return None

        def at(body: list[ast.stmt]) -> int | None:
            return next((i for i, st in enumerate(body) if isinstance(st, ast.Expr)
                         and isinstance(st.value, ast.Yield)), None)

        i = at(fn.body)
        if i is not None:
            return helper, fn.body[:i], fn.body[i].value.value, fn.body[i + 1:]
        for i, st in enumerate(fn.body):
            if isinstance(st, ast.Try) and (j := at(st.body)) is not None:
                return (helper, fn.body[:i] + st.body[:j], st.body[j].value.value,
                        st.body[j + 1:] + st.orelse + st.finalbody + fn.body[i + 1:])
        self.flags.add("unsure: context manager")
        return None

    def invoke(self, key, arg_nodes, kw_nodes, env, mod, *, recv=None, body=None,
               keep=None) -> tuple[tuple, frozenset]:
        """Run a workspace function inline: receiver attributes and in-place reductions of
        arguments flow back to the caller, and the attributes of an object it returns are left in
        ``self.returned``. ``body``: run these statements instead of the function's; ``keep``:
        receives its locals (a generator resumed later)."""
        fn, fmod = self.an.funcs[key][0]
        self.returned = (0, {})
        recv_key, recv_node = (recv is not None and _key(recv)) or None, recv
        if key in self.stack:
            return (_U, False), frozenset("U")
        params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
        local: dict = {}
        if key[0] == "m" and params and not _is_static(fn):
            me = params.pop(0)
            local[me] = self.ev(recv_node, env, mod) if recv_node is not None else _UNKNOWN
            for k, v in env.items():
                if recv_key and k.startswith(recv_key + "."):
                    local[me + k[len(recv_key):]] = v
        defaults = fn.args.defaults
        for i, p in enumerate(params):
            j = i - (len(params) - len(defaults))
            node = arg_nodes[i] if i < len(arg_nodes) else kw_nodes.get(p, defaults[j] if j >= 0 else None)
            local[p] = self.ev(node, env, mod) if node is not None else ((_U, False), frozenset("U"))
        for a in fn.args.kwonlyargs:
            local[a.arg] = self.ev(kw_nodes[a.arg], env, mod) if a.arg in kw_nodes else _UNKNOWN
        frame = self.run_body(key, fn, fmod, local, body)
        if keep is not None:
            keep.update(local)
        if len(frame.attrs) == 1 and len(frame.rets) == 1:
            self.returned = (0, frame.attrs[0])
        if recv_key and key[0] == "m" and fn.args.args:
            me = fn.args.args[0].arg
            for k, v in local.items():
                if k.startswith(me + "."):
                    env[recv_key + k[len(me):]] = v
        for i, p in enumerate(params):
            if p in frame.inplace and i < len(arg_nodes) and _key(arg_nodes[i]):
                env[_key(arg_nodes[i])] = local[p]
        if not frame.rets:
            return (None, False), frozenset()
        vals = {id(v[0][0]) if v[0][0] is _U else repr(v[0][0]) for v in frame.rets}
        val = frame.rets[0][0][0] if len(vals) == 1 else _U
        taint = _settled(frozenset().union(*(v[1] for v in frame.rets)))
        return (val, any(v[0][1] for v in frame.rets)), taint

    def run_body(self, key, fn, mod, local, body=None) -> _Frame:
        frame = _Frame()
        self.stack.append(key)
        self.frames.append(frame)
        try:
            self.block(fn.body if body is None else body, local, mod)
        finally:
            self.stack.pop()
            self.frames.pop()
        return frame

    run_function = run_body

    # -- statements ---------------------------------------------------------------------
    def _assign(self, target: ast.AST, value: tuple, env: dict, aug: bool = False) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            for t in target.elts:
                self._assign(t.value if isinstance(t, ast.Starred) else t, ((_U, value[0][1]), value[1]), env)
            return
        k = _key(target.value if isinstance(target, ast.Subscript) else target)
        if not k:
            return
        if aug or isinstance(target, ast.Subscript):  # accumulated over a loop: no longer one iteration's
            old = env.get(k, _UNKNOWN)
            value = ((_U, old[0][1] or value[0][1]), old[1] | _settled(value[1], keep=False))
        for stale in [s for s in env if s.startswith(k + ".")]:
            del env[stale]
        env[k] = value

    def block(self, stmts: list[ast.stmt], env: dict, mod: Module) -> str | None:
        """Run statements; returns how the block was left: None, "ret" or "loop"."""
        for i, st in enumerate(stmts):
            if isinstance(st, ast.If):
                (tv, td), _ = self.ev(st.test, env, mod)
                if tv is not _U:
                    out = self.block(st.body if tv else st.orelse, env, mod)
                    if out:
                        return out
                    continue
                ea, eb = dict(env), dict(env)
                xa, sa = self._sub(self.block, st.body, ea, mod)
                xb, sb = self._sub(self.block, st.orelse, eb, mod)
                if bool(xa) != bool(xb):  # one side leaves: the other runs the rest of the block
                    xa, sa2 = (xa, []) if xa else self._sub(self.block, stmts[i + 1:], ea, mod)
                    xb, sb2 = (xb, []) if xb else self._sub(self.block, stmts[i + 1:], eb, mod)
                    self._branch(st.lineno, td, sa + sa2, sb + sb2)
                    env.clear()
                    env.update(_merge(ea, eb))
                    return xa if xa == xb else None
                self._branch(st.lineno, td, sa, sb)
                env.update(_merge(ea, eb))
                if xa and xb:
                    return xa
            elif isinstance(st, (ast.For, ast.AsyncFor, ast.While)):
                it = self.ev(st.iter if not isinstance(st, ast.While) else st.test, env, mod)
                inner = dict(env)
                if not isinstance(st, ast.While):  # the item: one iteration's data (not a literal list)
                    literal = isinstance(st.iter, (ast.Tuple, ast.List, ast.Set))
                    item = it[1] if literal else it[1] | {f"I{st.lineno}"}
                    self._assign(st.target, (it[0], item), inner)
                _, body = self._sub(self.block, st.body, inner, mod)
                if body:
                    self.seq.append(("loop", st.lineno, tuple(body), it[0][1] and f"rank {self.r}"))
                marker = f"I{st.lineno}"
                env.update({k: (v[0], _settled(v[1], marker)) for k, v in _merge(env, inner).items()})
                self.block(st.orelse, env, mod)
            elif isinstance(st, (ast.With, ast.AsyncWith)):
                leave = [self._enter(item, env, mod) for item in st.items]
                out = self.block(st.body, env, mod)
                for fn in reversed(leave):
                    if fn is not None:
                        fn(env)
                if out:
                    return out
            elif isinstance(st, ast.Try) or type(st).__name__ == "TryStar":
                out = self.block(st.body, env, mod)
                for h in st.handlers:
                    he = dict(env)
                    _, sh = self._sub(self.block, h.body, he, mod)
                    if sh:
                        self.seq.append(("except", h.lineno, tuple(sh)))
                out = out or self.block(st.orelse, env, mod)
                out = self.block(st.finalbody, env, mod) or out
                if out:
                    return out
            elif isinstance(st, ast.Return):
                v = self.ev(st.value, env, mod)
                if self.frames:
                    self.frames[-1].rets.append(v)
                    k = st.value is not None and _key(st.value)
                    if k:
                        self.frames[-1].attrs.append({s[len(k):]: x for s, x in env.items()
                                                      if s.startswith(k + ".")})
                return "ret"
            elif isinstance(st, ast.Raise):
                self.ev(st.exc, env, mod)
                return "ret"
            elif isinstance(st, (ast.Break, ast.Continue)):
                return "loop"
            elif isinstance(st, ast.Assign) and isinstance(st.value, ast.Tuple) and len(st.targets) == 1 \
                    and len(getattr(st.targets[0], "elts", ())) == len(st.value.elts):  # a, b = x, y
                pairs = [(t, self.ev(v, env, mod))
                         for t, v in zip(st.targets[0].elts, st.value.elts, strict=True)]
                for t, v in pairs:
                    self._assign(t, v, env)
            elif isinstance(st, ast.Assign):
                v = self.ev(st.value, env, mod)
                if any(_key(t) and _key(t) in _reads(st.value) for t in st.targets):  # ``s = s + x``
                    v = (v[0], _settled(v[1], keep=False))
                attrs = self.returned[1] if self.returned[0] == id(st.value) else {}
                for t in st.targets:
                    self._assign(t, v, env)
                    if attrs and (k := _key(t)):  # ``out = make()``: the returned object's attributes
                        env.update({k + s: x for s, x in attrs.items()})
            elif isinstance(st, (ast.AugAssign, ast.AnnAssign)):
                if st.value is not None:
                    self._assign(st.target, self.ev(st.value, env, mod), env, isinstance(st, ast.AugAssign))
            elif isinstance(st, ast.Expr):
                self.ev(st.value, env, mod)
        return None


def _once(t: str) -> bool:
    """``L`` or a marker ``I<line>``: the value of one iteration (of the loop at that line)."""
    return t == "L" or t[0] == "I"


def _settled(t: frozenset, marker: str | None = None, keep: bool = True) -> frozenset:
    """``t`` with iteration markers (``marker`` only, if given) turned into ``L`` (left the loop:
    one iteration's value), or dropped with ``keep=False`` (accumulated, or used per iteration)."""
    mine = {x for x in t if x[0] == "I" and marker in (None, x)}
    if not mine:
        return t
    return (t - mine) | ({"L"} if keep else set())


def _reads(e: ast.AST) -> set[str]:
    return {k for n in ast.walk(e) if isinstance(n, (ast.Name, ast.Attribute)) and (k := _key(n))}


def _union(*taints: frozenset) -> frozenset:
    """Taints combined by an operation: a global count (S) used with local data is local data."""
    t = frozenset().union(*taints)
    return t - {"S"} if "N" in t else t


def _merge(a: dict, b: dict) -> dict:
    out = dict(a)
    for k, v in b.items():
        if k not in out or out[k] != v:
            o = out.get(k, v)
            same = o[0][0] is v[0][0] or (o[0][0] is not _U and v[0][0] is not _U and o[0][0] == v[0][0])
            out[k] = ((o[0][0] if same else _U, o[0][1] or v[0][1]), o[1] | v[1])
    return out


def _fold(e: ast.expr, vals: list):
    """The value of an operator expression whose operands are known, else _U."""
    if _U in vals or not vals:
        return _U
    if isinstance(e, ast.BinOp):
        v = folding.binary(e.op, *vals)
    elif isinstance(e, ast.UnaryOp):
        v = folding.unary(e.op, vals[0])
    elif isinstance(e, ast.Compare):
        v = folding.compare(e.ops, vals)
    else:
        return _U
    return _U if v is folding.NO_VALUE else v


def _is_property(fn: ast.FunctionDef) -> bool:
    return any(getattr(d, "id", getattr(d, "attr", "")) in ("property", "cached_property")
               for d in fn.decorator_list)


def _is_static(fn: ast.FunctionDef) -> bool:
    return any(getattr(d, "id", "") == "staticmethod" for d in fn.decorator_list)


class Analysis:
    """The workspace's modules and functions, as rank runs follow them. ``record_key``: a dict
    holding this key is a record (its values' provenance is kept); ``count_key``: its sample
    count; ``global_attrs``: attributes that hold a global (all-rank) count; ``model_names``:
    the variables a sharded model is called through (each call issues collectives)."""

    def __init__(self, files: dict[str, str], record_key: str, count_key: str,
                 global_attrs: tuple[str, ...] = (), model_names: tuple[str, ...] = ("model",)) -> None:
        self.modules = parse(files)
        self.record_key, self.count_key, self.global_attrs = record_key, count_key, global_attrs
        self.model_names = model_names  # variables holding the sharded model: calling one is a forward
        self.funcs: dict[tuple[str, str], list[tuple[ast.FunctionDef, Module]]] = {}
        self.rank_attrs: set[str] = set()
        for mod in self.modules.values():
            defs, attrs = _definitions(mod)
            for key, node in defs:
                self.funcs.setdefault(key, []).append((node, mod))
            self.rank_attrs |= attrs

    def helper_of(self, call: ast.Call, mod: Module) -> tuple[str, str] | None:
        """The workspace function a call reaches: ``f()`` / ``module.f()`` / ``obj.method()``."""
        f, root = call.func, call.func
        while isinstance(root, ast.Attribute):
            root = root.value
        imported = isinstance(root, ast.Name) and root.id in mod.names
        if imported and mod.names[root.id].split(".")[0] not in self.modules:
            return None  # torch, os, ... or a name imported from them
        if isinstance(f, ast.Name):
            key = ("f", mod.names.get(f.id, f.id).rsplit(".", 1)[-1])
        elif isinstance(f, ast.Attribute):
            key = ("f" if imported and isinstance(f.value, ast.Name) else "m", f.attr)
        else:
            return None
        return key if key in self.funcs else None

    def constant(self, e: ast.expr, mod: Module) -> tuple[object] | None:
        """``(value,)`` of a module-level name bound once, to a literal, in ``mod`` or in the
        workspace module it is imported from (``from metrics import FLAG`` / ``metrics.FLAG``),
        and nowhere rebound; None for anything else."""
        name = mod.dotted(e)
        if isinstance(e, ast.Name) and name == e.id:
            src, attr = mod, name
        elif "." in name and name.rsplit(".", 1)[0] in self.modules:
            src, attr = self.modules[name.rsplit(".", 1)[0]], name.rsplit(".", 1)[1]
            if isinstance(e, ast.Name) and _constants(mod)[1].get(e.id, 0) != 1:
                return None  # the imported name is rebound where it is used
        else:
            return None
        consts, _ = _constants(src)
        return (consts[attr],) if attr in consts else None

    def pg_timeout_s(self, fields: dict) -> float | None:
        """The process-group timeout `python train.py` runs with (config values resolved)."""
        found = None
        for mod in self.modules.values():
            for n in mod.of(ast.Call):
                if (mod.dotted(n.func) or "").endswith("init_process_group"):
                    val = {k.arg: k.value for k in n.keywords}.get("timeout")
                    if val is None:
                        found = DEFAULT_PG_TIMEOUT_S
                        continue
                    if not (isinstance(val, ast.Call) and (mod.dotted(val.func) or "").endswith("timedelta")):
                        return None
                    scale = {"days": 86400, "seconds": 1, "microseconds": 1e-6, "milliseconds": 1e-3,
                             "minutes": 60, "hours": 3600, "weeks": 604800}
                    pairs = [*zip(scale, val.args, strict=False), *((k.arg, k.value) for k in val.keywords)]
                    nums = [(k, number(v, fields)) for k, v in pairs]
                    if any(v is None or k not in scale for k, v in nums):
                        return None
                    found = sum(v * scale[k] for k, v in nums)
        return found


def _definitions(mod: Module) -> tuple[tuple[tuple[tuple[str, str], ast.AST], ...], frozenset[str]]:
    """One module's functions (keyed ``("m" | "f", name)``, in walk order) and the attributes it
    assigns from a rank: memoised on the module (they depend on its text alone)."""
    found = mod.facts.get("rank_definitions")
    if found is not None:
        return found
    methods = {id(f) for c in mod.of(ast.ClassDef) for f in c.body}
    defs, attrs = [], set()
    for node in mod.of(ast.FunctionDef, ast.AsyncFunctionDef, ast.Assign):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            defs.append((("m" if id(node) in methods else "f", node.name), node))
        if isinstance(node, ast.Assign) and any(isinstance(n, ast.Name) and is_rank_name(n.id)
                                                for n in ast.walk(node.value)):
            attrs |= {t.attr for t in node.targets if isinstance(t, ast.Attribute)}
    found = mod.facts["rank_definitions"] = (tuple(defs), frozenset(attrs))
    return found


def _constants(mod: Module) -> tuple[dict[str, object], dict[str, int]]:
    """A module's names bound once, at top level, to a literal (``FLAG = False``, what an
    environment read folds to) and how often each name is bound anywhere in it: memoised."""
    found = mod.facts.get("rank_constants")
    if found is not None:
        return found
    stores = binding_counts(mod.tree)
    consts = {st.targets[0].id: st.value.value for st in mod.tree.body
              if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name)
              and isinstance(st.value, ast.Constant) and stores.get(st.targets[0].id) == 1}
    found = mod.facts["rank_constants"] = (consts, stores)
    return found


def number(expr: ast.AST, fields: dict) -> float | None:
    if isinstance(expr, (ast.Attribute, ast.Name)):
        expr = fields.get(expr.attr if isinstance(expr, ast.Attribute) else expr.id, expr)
    try:
        v = ast.literal_eval(expr) if not isinstance(expr, (int, float)) else expr
    except (ValueError, TypeError, SyntaxError, RecursionError):
        if isinstance(expr, ast.BinOp):
            a, b = number(expr.left, fields), number(expr.right, fields)
            if a is not None and b is not None:
                return {ast.Add: a + b, ast.Sub: a - b, ast.Mult: a * b}.get(type(expr.op))
        if isinstance(expr, ast.Call) and getattr(expr.func, "id", "") in ("float", "int") and expr.args:
            return number(expr.args[0], fields)
        return None
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def rank_runs(an: Analysis, train: Module, fn: ast.FunctionDef) -> list[list[RankRun]]:
    """``fn(cfg, rank)`` as the check's driver calls it, and the mp.spawn target of the repo's own
    command, each run once per rank."""
    entries = [(("f", fn.name), fn)]
    for n in train.nodes:
        if isinstance(n, ast.Call) and (train.dotted(n.func) or "").endswith(".spawn") and n.args \
                and isinstance(n.args[0], ast.Name) and ("f", n.args[0].id) in an.funcs:
            entries.append((("f", n.args[0].id), an.funcs[("f", n.args[0].id)][0][0]))
    runs = []
    for key, f in entries:
        pair = []
        for r in range(WORLD):
            run = RankRun(an, r)
            args = [a.arg for a in f.args.args]
            # the rank: a parameter named so, or the first one of the spawn target
            is_rank = [is_rank_name(a) or (i == 0 and key != ("f", fn.name)) for i, a in enumerate(args)]
            run.run_function(key, f, train, {a: ((r, True) if rk else (_U, False), frozenset("N"))
                                             for a, rk in zip(args, is_rank, strict=True)})
            pair.append(run)
        runs.append(pair)
    return runs
