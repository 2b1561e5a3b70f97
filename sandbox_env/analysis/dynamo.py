"""Does compiled code branch on tensor data: the model's forward run as Dynamo traces it.

``Interp`` executes workspace Python (modules, functions, classes, properties, closures,
decorators, ``nn.Module`` subclasses with Linear / LayerNorm layers and forward hooks) over dual
tensors (``dual.T``), either eagerly or ``traced`` (``is_compiling()`` true): under tracing a
Python ``if`` / ``bool`` / ``and`` on a tensor, ``.item()`` / ``float(t)``, a
``torch.compiler.disable``d helper or a broken
``torch.cond`` branch is a recorded graph break. ``analyse_model`` runs a model builder on
probe batches both ways and compares outputs and tangents with a reference run. Anything it
does not model (an unknown torch op, try/except, in-place indexing...) raises ``Unknown``.
"""

from __future__ import annotations

import ast
import math
import random
from collections import ChainMap, OrderedDict

from . import UNSURE, Unsure, folding
from .calls import bind
from .dual import (
    CMP,
    CMPF,
    TORCH,
    UNARY,
    Linear,
    T,
    Unknown,
    _raise,
    as_t,
    binop,
    compare,
    ew,
    layer_norm,
)

COMPILING = {
    "torch.compiler.is_compiling",
    "torch._dynamo.is_compiling",
    "torch.compiler.is_dynamo_compiling",
    "torch._dynamo.external_utils.is_compiling",
    "torch._utils.is_compiling",
}
DISABLE = {"torch.compiler.disable", "torch._dynamo.disable"}


_MISSING = object()  # a parameter the call gives no value


class Poison:
    def __init__(self, why):
        self.why = why


class Mod:
    """A library namespace (torch, torch.nn.functional, math, ...)."""

    def __init__(self, path):
        self.path = path


class Func:
    def __init__(self, node, closure, glob, owner=None):
        self.node, self.closure, self.glob, self.owner = node, closure, glob, owner
        self.disabled = self.nograd = self.static = False


class Cls:
    def __init__(self, name, bases, ns):
        self.name, self.bases, self.ns = name, bases, ns

    def lookup(self, name):
        if name in self.ns:
            return self.ns[name], self
        for b in self.bases:
            if isinstance(b, Cls) and (hit := b.lookup(name))[0] is not None:
                return hit
        return None, None


class Prop:
    """A ``@property`` of a workspace class (and its ``@<name>.setter``)."""

    def __init__(self, getter):
        self.getter, self.setter = getter, None


def _property_role(node) -> str | None:
    """``getter`` for ``@property def x``, ``setter`` for ``@x.setter def x``, else None."""
    decs = getattr(node, "decorator_list", None) if isinstance(node, ast.FunctionDef) else None
    if not decs or len(decs) != 1:
        return None
    d = decs[0]
    if isinstance(d, ast.Name) and d.id == "property":
        return "getter"
    if isinstance(d, ast.Attribute) and d.attr == "setter" and getattr(d.value, "id", "") == node.name:
        return "setter"
    return None


class Obj:
    def __init__(self, cls):
        self.cls, self.attrs = cls, {"training": True}


class Bound:
    def __init__(self, fn, first):
        self.fn, self.first = fn, first


class Ret(Exception):
    def __init__(self, value):
        self.value = value


class Brk(Exception):
    pass


class Cont(Exception):
    pass


class Interp:
    """Runs workspace Python over dual tensors; ``traced`` = as Dynamo traces it."""

    def __init__(self, files, traced):
        self.files, self.traced, self.events, self.mods, self.depth = files, traced, [], {}, 0
        self.rng = random.Random(7321)
        self.hooks: dict[int, tuple[object, list]] = {}  # id(module) -> (module, its forward hooks)

    # -- modules
    def module(self, name):
        if name not in self.mods:
            path = next(
                (
                    p
                    for p in (name.replace(".", "/") + ".py", name.replace(".", "/") + "/__init__.py")
                    if p in self.files
                ),
                None,
            )
            if path is None:
                raise Unknown(f"module {name}")
            glob: dict = {"__name__": name}
            self.mods[name] = glob
            for st in ast.parse(self.files[path]).body:
                try:
                    self.stmt(st, glob, glob)
                except Unknown as exc:
                    for n in ast.walk(st):
                        if (isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)) or isinstance(
                            n, (ast.FunctionDef, ast.ClassDef)
                        ):
                            glob[getattr(n, "id", getattr(n, "name", ""))] = Poison(str(exc))
        return self.mods[name]

    def is_ws(self, name):
        root = name.split(".")[0]
        return root not in ("torch", "math") and any(
            p == root + ".py" or p.startswith(root + "/") for p in self.files
        )

    def do_import(self, st, env):
        if isinstance(st, ast.Import):
            for a in st.names:
                if self.is_ws(a.name):
                    env[a.asname or a.name.split(".")[0]] = (
                        "lazy",
                        a.name if a.asname else a.name.split(".")[0],
                        None,
                    )
                else:
                    env[a.asname or a.name.split(".")[0]] = Mod(a.name if a.asname else a.name.split(".")[0])
        elif st.level or not st.module:
            raise Unknown("relative import")
        elif st.module != "__future__":
            for a in st.names:
                ws = self.is_ws(st.module)
                env[a.asname or a.name] = ("lazy", st.module, a.name) if ws else Mod(f"{st.module}.{a.name}")

    # -- statements
    def block(self, stmts, env, glob):
        for st in stmts:
            self.stmt(st, env, glob)

    def stmt(self, st, env, glob):
        if isinstance(st, ast.Expr):
            self.ev(st.value, env, glob)
        elif isinstance(st, (ast.Assign, ast.AnnAssign)):
            if st.value is not None:
                v = self.ev(st.value, env, glob)
                for t in getattr(st, "targets", None) or [st.target]:
                    self.assign(t, v, env, glob)
        elif isinstance(st, ast.AugAssign):
            load = ast.fix_missing_locations(ast.copy_location(_as_load(st.target), st.target))
            self.assign(
                st.target, binop(st.op, self.ev(load, env, glob), self.ev(st.value, env, glob)), env, glob
            )
        elif isinstance(st, ast.Return):
            raise Ret(self.ev(st.value, env, glob) if st.value else None)
        elif isinstance(st, ast.If):
            self.block(st.body if self.truth(self.ev(st.test, env, glob)) else st.orelse, env, glob)
        elif isinstance(st, ast.For) and not st.orelse:
            for item in self.iterate(self.ev(st.iter, env, glob)):
                self.assign(st.target, item, env, glob)
                try:
                    self.block(st.body, env, glob)
                except Brk:
                    break
                except Cont:
                    continue
        elif isinstance(st, ast.While) and not st.orelse:
            for _ in range(10000):
                if not self.truth(self.ev(st.test, env, glob)):
                    return
                try:
                    self.block(st.body, env, glob)
                except Brk:
                    return
                except Cont:
                    continue
            raise Unknown("long loop")
        elif isinstance(st, (ast.Break, ast.Continue)):
            raise Brk() if isinstance(st, ast.Break) else Cont()
        elif isinstance(st, ast.With) and all(
            isinstance(i.context_expr, ast.Call)
            and not i.optional_vars
            and self.is_nograd(self.ev(i.context_expr.func, env, glob))
            for i in st.items
        ):
            try:  # what the block assigns or returns carries no gradient
                self.block(st.body, env, glob)
            except Ret as r:
                raise Ret(_detach(r.value)) from None
            finally:
                for n in ast.walk(ast.Module(st.body, [])):
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id in env:
                        env[n.id] = _detach(env[n.id])
        elif isinstance(st, ast.FunctionDef):
            env[st.name] = self.define(st, env, glob)
        elif isinstance(st, ast.ClassDef) and not st.decorator_list and not st.keywords:
            ns: dict = {}
            cls = Cls(st.name, [self.ev(b, env, glob) for b in st.bases], ns)
            for sub in st.body:
                role, scope = _property_role(sub), env if env is not glob else ChainMap()
                if role == "getter":
                    ns[sub.name] = Prop(self.define(sub, scope, glob, cls, False))
                elif role == "setter" and isinstance(ns.get(sub.name), Prop):
                    ns[sub.name].setter = self.define(sub, scope, glob, cls, False)
                elif isinstance(sub, ast.FunctionDef):
                    ns[sub.name] = self.define(sub, env if env is not glob else ChainMap(), glob, cls)
                else:
                    self.stmt(sub, ns, glob)
            env[st.name] = cls
        elif isinstance(st, (ast.Import, ast.ImportFrom)):
            self.do_import(st, env)
        elif isinstance(st, ast.Assert):
            if not self.truth(self.ev(st.test, env, glob)):
                raise Unknown("assertion fails")
        elif not isinstance(st, ast.Pass):
            raise Unknown(f"statement {type(st).__name__}")

    def is_nograd(self, v):
        return isinstance(v, Mod) and v.path.rsplit(".", 1)[-1] in ("no_grad", "inference_mode")

    def define(self, node, env, glob, owner=None, decorated=True):
        fn = Func(node, env if isinstance(env, ChainMap) else ChainMap(), glob, owner)
        for dec in node.decorator_list if decorated else ():
            d = self.ev(dec.func if isinstance(dec, ast.Call) else dec, env, glob)
            if isinstance(d, Mod) and d.path in DISABLE:
                fn.disabled = True
            elif d is staticmethod:
                fn.static = True
            elif not (isinstance(d, Mod) and self.is_nograd(d)):
                raise Unknown("decorator")
            else:
                fn.nograd = True
        return fn

    def assign(self, t, v, env, glob):
        if isinstance(t, ast.Name):
            env[t.id] = v
        elif isinstance(t, (ast.Tuple, ast.List)):
            vals = list(self.iterate(v))
            if len(vals) != len(t.elts):
                raise Unknown("unpacking")
            for sub, x in zip(t.elts, vals, strict=False):
                self.assign(sub, x, env, glob)
        elif isinstance(t, ast.Attribute) and isinstance(obj := self.ev(t.value, env, glob), Obj):
            prop = obj.cls.lookup(t.attr)[0]
            if isinstance(prop, Prop):
                if prop.setter is None:
                    raise Unknown(f"property {t.attr} without a setter")
                self.call_func(prop.setter, [obj, v], {})
            else:
                obj.attrs[t.attr] = v
        else:
            raise Unknown("assignment target")

    def iterate(self, v):
        if isinstance(v, (list, tuple, range)):
            return list(v)
        raise Unknown("iteration")

    def truth(self, v):
        if isinstance(v, T):
            if self.traced:
                self.events.append("branch")
            if len(v.v) != 1:
                raise Unknown("truth of a multi-element tensor")
            return bool(v.v[0])
        if isinstance(v, (bool, int, float, str, type(None), list, tuple)):
            return bool(v)
        return True

    def scalar(self, t):
        if self.traced:
            self.events.append("item")
        if len(t.v) != 1:
            raise Unknown("item of a multi-element tensor")
        return t.v[0]

    # -- expressions
    def ev(self, e, env, glob):
        if isinstance(e, ast.Constant):
            return e.value
        if isinstance(e, ast.Name):
            if e.id in env:
                v = env[e.id]
            elif e.id in glob:
                v = glob[e.id]
            elif e.id in BUILTINS:
                return BUILTINS[e.id]
            else:
                raise Unknown(f"name {e.id}")
            if isinstance(v, tuple) and len(v) == 3 and v[0] == "lazy":
                v = self.module(v[1]) if v[2] is None else self.module(v[1]).get(v[2], Poison("missing"))
                v = ("wsmod", v) if isinstance(v, dict) else v
            if isinstance(v, Poison):
                raise Unknown(v.why)
            return v
        if isinstance(e, ast.Attribute):
            return self.attr(self.ev(e.value, env, glob), e.attr)
        if isinstance(e, ast.Call):
            args = []
            for a in e.args:
                args += (
                    self.iterate(self.ev(a.value, env, glob))
                    if isinstance(a, ast.Starred)
                    else [self.ev(a, env, glob)]
                )
            if any(k.arg is None for k in e.keywords):
                raise Unknown("**kwargs")
            return self.call(
                self.ev(e.func, env, glob),
                args,
                {k.arg: self.ev(k.value, env, glob) for k in e.keywords},
                env,
            )
        if isinstance(e, ast.BinOp):
            return binop(e.op, self.ev(e.left, env, glob), self.ev(e.right, env, glob))
        if isinstance(e, ast.UnaryOp):
            v = self.ev(e.operand, env, glob)
            if isinstance(e.op, ast.Not):
                return not self.truth(v)
            if isinstance(e.op, ast.USub):
                return ew(UNARY["neg"], v) if isinstance(v, T) else -v
            if isinstance(e.op, ast.Invert) and isinstance(v, T) and v.isbool:
                return TORCH["logical_not"](v)
            return v if isinstance(e.op, ast.UAdd) else _raise("unary op")
        if isinstance(e, ast.Compare):
            left, result = self.ev(e.left, env, glob), True
            for op, c in zip(e.ops, e.comparators, strict=False):
                right = self.ev(c, env, glob)
                if isinstance(op, (ast.Is, ast.IsNot)):
                    r = (left is right) == isinstance(op, ast.Is)
                elif isinstance(left, T) or isinstance(right, T):
                    if type(op) not in CMP:
                        raise Unknown("comparison")
                    r = compare(CMP[type(op)], left, right)
                elif type(op) in CMP and all(isinstance(x, (int, float)) for x in (left, right)):
                    r = CMPF[CMP[type(op)]](left, right)
                elif any(isinstance(x, T) for x in (right if isinstance(right, (tuple, list)) else ())) or \
                        (r := folding.compare([op], [left, right])) is folding.NO_VALUE:
                    raise Unknown("comparison")
                if len(e.ops) == 1:
                    return r
                if not self.truth(r):
                    return False
                left = right
            return result
        if isinstance(e, ast.BoolOp):
            for i, sub in enumerate(e.values):
                v = self.ev(sub, env, glob)
                if i == len(e.values) - 1 or self.truth(v) == isinstance(e.op, ast.Or):
                    return v
        if isinstance(e, ast.IfExp):
            return self.ev(e.body if self.truth(self.ev(e.test, env, glob)) else e.orelse, env, glob)
        if isinstance(e, (ast.Tuple, ast.List)):
            vals = [self.ev(x, env, glob) for x in e.elts]
            return tuple(vals) if isinstance(e, ast.Tuple) else vals
        if isinstance(e, ast.Subscript):
            v, i = self.ev(e.value, env, glob), self.ev(e.slice, env, glob)
            if isinstance(v, (list, tuple)) and isinstance(i, int):
                return v[i]
            raise Unknown("indexing")
        if isinstance(e, ast.Lambda):
            return Func(e, ChainMap(env) if not isinstance(env, ChainMap) else env, glob)
        if isinstance(e, ast.JoinedStr):
            return ""
        if (
            isinstance(e, (ast.GeneratorExp, ast.ListComp))
            and len(e.generators) == 1
            and not e.generators[0].ifs
        ):
            g, out = e.generators[0], []
            for item in self.iterate(self.ev(g.iter, env, glob)):
                inner = ChainMap({}, env)
                self.assign(g.target, item, inner, glob)
                out.append(self.ev(e.elt, inner, glob))
            return out
        raise Unknown(f"expression {type(e).__name__}")

    def attr(self, v, name):
        if isinstance(v, T):
            if name == "shape":
                return v.shape
            if name == "dtype":
                return "bool" if v.isbool else "float32"
            if name == "data":
                return T(v.shape, v.v, None, v.isbool)
            if name == "ndim":
                return len(v.shape)
            if name in TORCH or name in ("item", "tolist", "dim", "numel", "size"):
                return Bound(name, v)
            raise Unknown(f"Tensor.{name}")
        if isinstance(v, Mod):
            path = f"{v.path}.{name}"
            if path in ("math.inf", "torch.inf"):
                return math.inf
            if path.startswith("torch.") and name in ("float32", "float", "float64", "bool"):
                return {"float": "float32"}.get(name, name)
            return Mod(path)
        if isinstance(v, tuple) and len(v) == 2 and v[0] == "wsmod":
            if name not in v[1] or isinstance(v[1][name], Poison):
                raise Unknown(f"module attribute {name}")
            return v[1][name]
        if isinstance(v, (Obj, Linear)) and name == "register_forward_hook":
            return self.hooks.setdefault(id(v), (v, []))[1].append
        if isinstance(v, Obj):
            if isinstance(prop := v.cls.lookup(name)[0], Prop):
                return self.call_func(prop.getter, [v], {})
            if name in v.attrs:
                return v.attrs[name]
            fn, _ = v.cls.lookup(name)
            if isinstance(fn, Func):
                return fn if fn.static else Bound(fn, v)
            if fn is not None:
                return fn
            if name in ("register_buffer", "register_parameter", "add_module"):
                return lambda n, t, *a, **k: v.attrs.__setitem__(n, t)
            raise Unknown(f"attribute {name}")
        if isinstance(v, tuple) and name == "values" and len(v) == 2:
            return v[0]
        if isinstance(v, _Cfg):
            if name not in v.values:
                raise Unknown(f"cfg.{name}")
            return v.values[name]
        if isinstance(v, _Super):
            for b in v.cls.bases:
                if isinstance(b, Cls) and (fn := b.lookup(name)[0]) is not None:
                    return Bound(fn, v.obj) if isinstance(fn, Func) else fn
            if name == "__init__":
                return lambda *a, **k: None
            raise Unknown(f"super().{name}")
        raise Unknown(f"attribute {name} of {type(v).__name__}")

    def call(self, f, args, kw, env=None):
        out = self.call_unhooked(f, args, kw, env)
        for hook in self.hooks.get(id(f), (None, ()))[1]:  # forward hooks (Dynamo inlines them)
            if (new := self.call(hook, [f, tuple(args), out], {})) is not None:
                out = new
        return out

    def call_unhooked(self, f, args, kw, env=None):
        if isinstance(f, Bound) and isinstance(f.fn, str):
            t, name = f.first, f.fn
            if name in ("item", "tolist"):
                return self.scalar(t)
            if name in ("dim", "numel", "size"):
                return (
                    {"dim": len(t.shape), "numel": len(t.v)}.get(name)
                    if name != "size"
                    else (t.shape if not args else t.shape[args[0]])
                )
            return TORCH[name](t, *args, **kw)
        if isinstance(f, Bound):
            return self.call(f.fn, [f.first, *args], kw)
        if isinstance(f, Func):
            return self.call_func(f, args, kw)
        if isinstance(f, Cls):
            obj = Obj(f)
            init, _ = f.lookup("__init__")
            if init is not None:
                self.call_func(init, [obj, *args], kw)
            elif any(not (isinstance(b, Mod) and b.path.endswith("nn.Module")) for b in f.bases):
                raise Unknown("class base")
            return obj
        if isinstance(f, Obj):
            fn, _ = f.cls.lookup("__call__")
            fn = fn or f.cls.lookup("forward")[0]
            if not isinstance(fn, Func):
                raise Unknown("module without forward")
            return self.call_func(fn, [f, *args], kw)
        if isinstance(f, Mod):
            return self.call_lib(f.path, args, kw)
        if (callable(f) and not isinstance(f, type)) or f in SAFE_TYPES:
            if f in (float, int) and args and isinstance(args[0], T):
                return f(self.scalar(args[0]))
            if f is bool and args:
                return self.truth(args[0])
            if f is _super:
                return (
                    _Super(env["__class__"], env[next(iter(env["__args__"]))]) if not args else _Super(*args)
                )
            if f in (min, max) and len(args) == 2 and any(isinstance(a, T) for a in args):
                if self.traced:  # Dynamo rewrites builtin min/max of tensors to torch.minimum/maximum
                    return TORCH["minimum" if f is min else "maximum"](as_t(args[0]), as_t(args[1]))
                a, b = args
                return (
                    (b if as_t(b).v[0] < as_t(a).v[0] else a)
                    if f is min
                    else (b if as_t(b).v[0] > as_t(a).v[0] else a)
                )
            if f in (min, max, abs, len) and any(isinstance(a, T) for a in args):
                if f is abs:
                    return ew(UNARY["abs"], args[0])
                raise Unknown("builtin on tensors")
            return f(*args, **kw)
        raise Unknown(f"call of {type(f).__name__}")

    def call_lib(self, path, args, kw):
        if path in COMPILING:
            return self.traced
        if path in ("torch.jit.is_scripting", "torch.jit.is_tracing", "torch.compiler.is_exporting"):
            return False
        if path in DISABLE:
            fn = args[0] if args else None
            if not isinstance(fn, (Func, Bound)):
                raise Unknown("disable(...)")
            wrapped = Func(fn.fn.node if isinstance(fn, Bound) else fn.node, None, None)
            wrapped.__dict__.update((fn.fn if isinstance(fn, Bound) else fn).__dict__, disabled=True)
            return Bound(wrapped, fn.first) if isinstance(fn, Bound) else wrapped
        if path in ("torch._dynamo.graph_break", "torch.compiler.graph_break"):
            if self.traced:
                self.events.append("disable")
            return None
        if path == "torch.cond":
            return self.cond(*args, **kw)
        nn = path.removeprefix("torch.nn.").removeprefix("nn.")
        if nn == "Linear":
            return Linear(self.rng, *args, **kw)
        if nn in ("GELU", "ReLU", "Tanh", "Identity", "LayerNorm", "ModuleList", "Parameter"):
            if (nn == "GELU" and kw.get("approximate", "none") != "none") or (
                nn == "LayerNorm" and (len(args) > 1 or set(kw) - {"eps"})
            ):
                raise Unknown(f"{nn} options")
            return {
                "GELU": lambda: TORCH["gelu"],
                "ReLU": lambda: TORCH["relu"],
                "Tanh": lambda: TORCH["tanh"],
                "Identity": lambda: lambda x: x,
                "LayerNorm": lambda: lambda x: layer_norm(x, kw.get("eps", 1e-5)),
                "ModuleList": lambda: list(args[0]) if args else [],
                "Parameter": lambda: args[0],
            }[nn]()
        name = path.removeprefix("torch.nn.functional.").removeprefix("torch.")
        if (
            name in TORCH
            and path.startswith("torch.")
            and (name != "gelu" or kw.get("approximate", "none") == "none")
        ):
            return TORCH[name](*args, **{k: v for k, v in kw.items() if k not in ("approximate", "device")})
        if (
            path.startswith("math.")
            and hasattr(math, name := path[5:])
            and not any(isinstance(a, T) for a in args)
        ):
            return getattr(math, name)(*args)
        raise Unknown(f"call of {path}")

    def cond(self, pred, true_fn, false_fn, operands=()):
        """torch.cond traces both branches (even eagerly); a branch returning an existing tensor or
        outputs that differ in shape make it fail."""
        traced, self.traced, start = self.traced, True, T.serial
        outs = []
        for fn in (true_fn, false_fn):
            out = self.call(fn, list(operands), {})
            for o in out if isinstance(out, (tuple, list)) else [out]:
                if not isinstance(o, T) or o.id <= start:
                    self.events.append("cond")
            outs.append(out)
        self.traced = traced
        if isinstance(outs[0], T) and isinstance(outs[1], T) and outs[0].shape != outs[1].shape:
            self.events.append("cond")
        return outs[0] if self.truth_quiet(pred) else outs[1]

    @staticmethod
    def truth_quiet(pred):
        return bool(as_t(pred).v[0]) if isinstance(pred, T) else bool(pred)

    def call_func(self, fn, args, kw):
        node = fn.node
        self.depth += 1
        if self.depth > 100:
            raise Unknown("recursion")
        traced = self.traced
        if fn.disabled and traced:
            self.events.append("disable")
            self.traced = False
        try:
            a = node.args
            if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs:
                raise Unknown("signature")
            names = [x.arg for x in a.args]
            try:
                bound = bind(node, args, kw, lambda d: self.ev(d, fn.closure or ChainMap(), fn.glob),
                             missing=_MISSING)
            except Unsure as exc:
                raise Unknown(str(exc)) from None
            if _MISSING in bound.values():
                raise Unknown("missing argument")
            env = (fn.closure or ChainMap()).new_child(bound)
            if fn.owner is not None:
                env["__class__"], env["__args__"] = fn.owner, names
            if isinstance(node, ast.Lambda):
                out = self.ev(node.body, env, fn.glob)
            else:
                try:
                    self.block(node.body, env, fn.glob)
                    out = None
                except Ret as r:
                    out = r.value
            return _detach(out) if fn.nograd else out
        finally:
            self.traced = traced
            self.depth -= 1


class _Cfg:
    def __init__(self, values):
        self.values = values


class _Super:
    def __init__(self, cls, obj):
        self.cls, self.obj = cls, obj


def _super(*a):
    raise AssertionError("handled by Interp.call")


def _detach(v):
    return T(v.shape, v.v, None, v.isbool) if isinstance(v, T) else v


def _as_load(node):
    new = ast.parse(ast.unparse(node), mode="eval").body
    return new


SAFE_TYPES = (float, int, bool, range, tuple, list, zip, enumerate)
BUILTINS = {
    "float": float,
    "int": int,
    "bool": bool,
    "len": len,
    "range": range,
    "min": min,
    "max": max,
    "abs": abs,
    "tuple": tuple,
    "list": list,
    "zip": zip,
    "enumerate": enumerate,
    "super": _super,
    "staticmethod": staticmethod,
    "isinstance": lambda x, c: isinstance(x, T) or _raise("isinstance"),
    "True": True,
    "False": False,
    "None": None,
}


def probes(features: int) -> list:
    """Six probe batches of 4 rows, from tiny to large magnitudes (some rows over any limit)."""
    rng = random.Random(90210)
    out = []
    for scales in ([0.02] * 4, [0.3] * 4, [2.0] * 4, [8.0] * 4, [40.0] * 4, [0.05, 30.0, 0.5, 5.0]):
        v = [rng.gauss(0, 1) * s for s in scales for _ in range(features)]
        out.append(T((4, features), v, [rng.gauss(0, 1) for _ in v]))
    return out


class _Reads(dict):
    """The workspace files as the interpreter sees them, noting the texts it reads."""

    def __init__(self, files: dict[str, str]) -> None:
        super().__init__(files)
        self.read: dict[str, str] = {}

    def __getitem__(self, path: str) -> str:
        text = super().__getitem__(path)
        self.read[path] = text
        return text


# (file names, builder, cfg, features, traced) -> [(texts read, result)], newest last. A run
# depends on the names of the workspace files and the texts of those it imports, nothing else:
# a state that changes only train.py reuses the model's runs.
_RUNS: OrderedDict[tuple, list[tuple[dict[str, str], tuple]]] = OrderedDict()
_RUNS_MAX = 128


def run_model(files: dict[str, str], builder: tuple[str, str], cfg: dict, features: int, traced: bool):
    """``builder`` (module, function) called with ``cfg``, then its forward on the probes:
    (outputs or None, break events, why it could not tell or None)."""
    # repr tells 1, 1.0 and True apart (they hash alike); a setting without a literal repr
    # (an object's repr names its address) only makes the memo miss
    key = (frozenset(files), builder, repr(sorted(cfg.items())), repr(features), traced)
    result = next((res for read, res in _RUNS.get(key, [])
                   if all(files.get(p) == t for p, t in read.items())), None)
    if result is None:
        seen = _Reads(files)
        outs, events, unk = _run_model(seen, builder, cfg, features, traced)
        result = (outs, tuple(events), unk)
        _RUNS.setdefault(key, []).append((seen.read, result))
        del _RUNS[key][:-8]
    _RUNS.move_to_end(key)
    while len(_RUNS) > _RUNS_MAX:
        _RUNS.popitem(last=False)
    outs, events, unk = result
    return (list(outs) if outs is not None else None), list(events), unk


run_model.cache_clear = _RUNS.clear  # type: ignore[attr-defined]  # like the lru caches


def _run_model(files: dict[str, str], builder: tuple[str, str], cfg: dict, features: int, traced: bool):
    it = Interp(files, traced)
    try:
        net = it.call(it.module(builder[0])[builder[1]], [_Cfg(dict(cfg))], {})
        return [it.call(net, [x], {}) for x in probes(features)], it.events, None
    except (Unknown, KeyError, TypeError, ValueError, ZeroDivisionError, OverflowError,
            RecursionError) as exc:
        return None, it.events, f"{type(exc).__name__}: {exc}"


def same(a, b, tol=1e-6) -> bool:
    return all(
        isinstance(x, T)
        and x.shape == y.shape
        and all(abs(p - q) <= tol * (1 + abs(q)) for p, q in zip(x.v + x.d, y.v + y.d, strict=False))
        for x, y in zip(a, b, strict=False)
    )


def analyse_model(files: dict[str, str], builder: tuple[str, str], cfg: dict, features: int, reference: list):
    """('break', {kinds}) | ('wrong', None) | ('ok', None) | (UNSURE, why), against the
    ``reference`` outputs (an eager run of the reference code on the same probes)."""
    for traced in (True, False):
        outs, events, unk = run_model(files, builder, cfg, features, traced)
        if events:  # the first break is where Dynamo stops, whatever follows
            return "break", set(events)
        if unk:
            return UNSURE, unk
        if not same(outs, reference):
            return "wrong", None
    return "ok", None


# ---------------------------------------------------------------------------- training side
def dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def calls_in(node):
    return [n for n in ast.walk(node) if isinstance(n, ast.Call)]


def call_name(c: ast.Call) -> str:
    return getattr(c.func, "attr", getattr(c.func, "id", ""))


class TrainAnalysis:
    """How the training entry point uses torch.compile (``loop_compiled`` None: not seen)."""

    def __init__(self) -> None:
        self.main_trains = True
        self.loop_compiled: bool | None = None
        self.eager_fallback = False
        self.fullgraph: object = "cfg"  # "cfg", True, False


def analyse_train(tree: ast.Module, train: str = "train", builder: str = "build_model") -> TrainAnalysis:
    """What the training module compiles and what its training loop calls: the compiled model,
    the eager one, or the compiled one with an eager fallback (``fullgraph`` as written)."""
    res = TrainAnalysis()
    funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    builders = {
        n
        for n, f in funcs.items()
        if any(call_name(c) == "compile" and "torch" in dotted(c.func) for c in calls_in(f))
    }
    train_fn = funcs.get(train) or next(
        (f for f in funcs.values() if any(call_name(c) == "backward" for c in calls_in(f))), None
    )
    if train_fn is None:
        res.main_trains = False
        return res
    if "main" in funcs:
        res.main_trains = any(getattr(c.func, "id", "") == train_fn.name for c in calls_in(funcs["main"]))
    compiled, eager = set(), set()
    for node in ast.walk(train_fn):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            c, tgt = node.value, {t.id for t in node.targets if isinstance(t, ast.Name)}
            if (call_name(c) == "compile" and "torch" in dotted(c.func)) or call_name(c) in builders:
                compiled |= tgt
            elif call_name(c) == builder:
                eager |= tgt
    for c in (c for f in [train_fn, *(funcs[b] for b in builders)] for c in calls_in(f)):
        for k in c.keywords:
            if call_name(c) == "compile" and k.arg == "fullgraph" and isinstance(k.value, ast.Constant):
                res.fullgraph = bool(k.value.value)
    for loop in (n for n in ast.walk(train_fn) if isinstance(n, (ast.For, ast.While))):
        handlers = {
            id(x) for t in ast.walk(loop) if isinstance(t, ast.Try) for h in t.handlers for x in ast.walk(h)
        }
        callees = [
            n.value.func.id
            for n in ast.walk(loop)
            if id(n) not in handlers
            and isinstance(n, ast.Assign)
            and isinstance(n.value, ast.Call)
            and isinstance(n.value.func, ast.Name)
            and n.value.func.id in compiled | eager
        ]
        if callees:
            res.loop_compiled = all(c in compiled for c in callees)
        for tr in (n for n in ast.walk(loop) if isinstance(n, ast.Try)):
            if {
                getattr(c.func, "id", "") for c in calls_in(ast.Module(tr.body, []))
            } & compiled and tr.handlers:
                res.eager_fallback = True
    return res
