"""Gradient synchronisation of a data-parallel training step: does the loss reach a submodule's
parameters through autograd, and is every gradient averaged across ranks.

``Interp`` runs the training function abstractly, once for a step where the scheduled
objective (the ``head`` submodule's term, every ``schedule`` steps) is on and once where it is
off. Helper functions, the model's forward and its methods are inlined (``self.training`` is
true unless ``.eval()`` was called, ``torch.is_grad_enabled()`` outside ``no_grad``; a fresh
``Config()`` holds the defaults); constants and config defaults are folded (``step %
cfg.<schedule>`` is 0 in the "on" step; the schedule's period is at least 2, so
``cfg.<schedule> > 1`` holds) except the fields the check draws.
Values track whether the loss depends through autograd on the head's parameters and whether
the head contributes a non-zero amount (scaled by the ``weight`` field; the head applied to an
empty batch contributes nothing). It records the DDP wrappers and their options (a workspace
subclass of DDP whose forward calls ``self.module``: a forward that bypasses the reducer), the
model class's literal class attributes, forwards (through DDP, the raw module, under ``no_sync``),
backwards, manual gradient all-reduces, optimisers and swallowed errors. Anything it does not
model on a path that matters (a branch it cannot decide that changes the loss or holds a
collective, rank-dependent training code, unknown DDP options, unrecognised gradient
collectives...) raises ``Unsure``.
"""

import ast
from dataclasses import dataclass, replace

from . import Unsure, folding
from .calls import bind
from .exits import EXIT_CALLS
from .workspace import aliases as _aliases
from .workspace import dotted as _dotted
from .workspace import nodes, owner


@dataclass(frozen=True)
class Roles:
    """Task facts the interpretation needs: the conditionally used submodule (attribute name),
    the config fields of its schedule and weight, the fields the check draws (not folded), the
    model's module and its builder function, the config's module and class (``Config()``: the
    defaults)."""

    head: str
    schedule: str
    weight: str
    owned: frozenset
    model_module: str = "model.py"
    builder: str = "build_model"
    config_module: str = "config.py"
    config_class: str = "Config"

    @property
    def head_params(self) -> set[str]:
        return {f"{self.head}.weight", f"{self.head}.bias"}


NO_GRAD_FUNCS = {"zeros_like", "ones_like", "empty_like", "full_like", "zeros", "ones", "tensor",
                 "new_zeros", "new_ones", "new_empty", "new_full", "new_tensor",
                 "randn_like", "rand_like", "as_tensor", "item", "tolist", "numpy", "detach"}
EMPTY_MAKERS = {"zeros", "ones", "empty", "new_zeros", "new_ones", "new_empty", "randn", "rand"}
HARMLESS_COLLECTIVES = {"barrier", "broadcast", "init_process_group", "destroy_process_group"}
UNK = object()  # unknown constant


class _Return(Exception):
    def __init__(self, val):
        self.val = val


class _Continue(Exception):
    pass


class _Exit(Exception):
    pass


def _method(cls: ast.ClassDef, name: str) -> ast.FunctionDef | None:
    return next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == name), None)


def _starred(call: ast.Call) -> bool:
    return any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords)


def _mentions_attr(node: ast.AST, attr: str) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr == attr for n in ast.walk(node))


def _catches_runtime(h: ast.ExceptHandler) -> bool:
    types = [] if h.type is None else h.type.elts if isinstance(h.type, ast.Tuple) else [h.type]
    return h.type is None or any(getattr(t, "attr", getattr(t, "id", "")) in (
        "RuntimeError", "Exception", "BaseException", "DistBackendError", "DistError") for t in types)


def _swallows(t: ast.Try) -> bool:
    return any(_catches_runtime(h) and not any(isinstance(n, ast.Raise) for n in ast.walk(h))
               for h in t.handlers)


def _schedule_compare(ops: list[ast.cmpop], vals: list["Val"]) -> bool | None:
    """``cfg.<schedule> > 1`` and the like: the schedule is a period of at least 2 (the
    interpretation has a step where the objective is off), so a comparison with a constant is
    decided when it holds alike at 2 and at any larger period; None when it is not."""
    if len(ops) != 1 or [v.kind == "schedule" for v in vals].count(True) != 1:
        return None
    other = vals[1] if vals[0].kind == "schedule" else vals[0]
    if isinstance(other.const, bool) or not isinstance(other.const, (int, float)):
        return None
    ends = []
    for period in (2, 3, 10**12):  # 3: an integer period between 2 and a constant below 3
        pair = [period, other.const] if vals[0].kind == "schedule" else [other.const, period]
        if isinstance(ops[0], (ast.Eq, ast.NotEq)) and other.const >= 2:
            return None
        ends.append(folding.compare(ops, pair))
    return ends[0] if ends[0] is not folding.NO_VALUE and len(set(map(bool, ends))) == 1 else None


def _collective_name(call: ast.Call, aliases: dict[str, str]) -> str | None:
    """``all_reduce`` for ``dist.all_reduce(...)`` / ``torch.distributed.all_reduce``, else None."""
    q = _dotted(call.func, aliases)
    return q.rsplit(".", 1)[-1] if q.startswith("torch.distributed") else None


@dataclass(frozen=True)
class Val:
    grad: bool = False  # autograd path to the head's parameters
    value: bool = False  # the head contributes a non-zero amount
    weighted: bool = True  # every head contribution is scaled by the weight field
    unsure: bool = False  # depends on a branch the analysis could not decide
    const: object = UNK  # folded constant value
    kind: str | None = None  # ddp | raw | self | params_all | params_head | step | nosync | null
    is_w: bool = False  # the aux weight itself
    tup: tuple | None = None

    @property
    def zero(self) -> bool:
        return self.const is not UNK and isinstance(self.const, (int, float)) and self.const == 0


N = Val()


def _mix(*vals: Val) -> Val:
    return Val(grad=any(v.grad for v in vals), value=any(v.value for v in vals),
               weighted=all(v.weighted for v in vals if v.value), unsure=any(v.unsure for v in vals))


def _join(a: Val, b: Val) -> Val:
    return a if a == b else replace(_mix(a, b), unsure=True)


def _head(trainable: bool) -> Val:
    return Val(grad=trainable, value=True, weighted=False)


class Interp:
    def __init__(self, world: bool, ctx: "Ctx"):
        self.world, self.c = world, ctx
        self.uncertain = 0  # depth of branches the analysis could not decide
        self.in_loop = False
        self.nosync = False
        self.nograd = False
        self.eval_mode = False  # model.eval() called (self.training is False)
        self.catching = False  # inside a try that swallows RuntimeError
        self.depth = 0
        self.ddp: list[dict] = []
        self.forwards: list[tuple[str, bool]] = []
        self.backwards: list[Val] = []
        self.reduces: list[tuple[str, bool]] = []  # (all|head, averaged)
        self.optimizers: list[ast.Call] = []
        self.static_call = False
        self.loop_seen = False
        self.swallowed = False
        self.switches: dict[str, Val] = {}  # model attributes the code sets (model.recon_on = ...)

    def event(self, what: str) -> None:
        if self.uncertain:
            raise Unsure(f"{what} under a branch the analysis cannot decide")
        if self.catching and self.in_loop and what in ("forward", "backward"):
            self.swallowed = True

    # -- functions ---------------------------------------------------------------------------
    def call_fn(self, fn: ast.FunctionDef, args: list[Val], kwargs: dict[str, Val],
                bound: dict[str, Val] | None = None) -> Val:
        self.depth += 1
        if self.depth > 12:
            raise Unsure("recursion")
        env = {**(bound or {}), **bind(fn, args, kwargs, lambda d: self.ev(d, {}), extra=N,
                                       skip=set(bound or {}))}
        try:
            self.run(fn.body, env)
            out = N
        except _Return as r:
            out = r.val
        self.depth -= 1
        return out

    # -- expressions ------------------------------------------------------------------------
    def ev(self, node: ast.AST | None, env: dict[str, Val]) -> Val:
        v = self._ev(node, env) if node is not None else N
        return replace(v, grad=False) if self.nograd and v.grad else v

    def _ev(self, node: ast.AST, env: dict[str, Val]) -> Val:
        c = self.c
        if isinstance(node, ast.Constant):
            return Val(const=node.value, is_w=node.value == c.config.get(self.c.roles.weight, UNK))
        if isinstance(node, ast.Name):
            if node.id in env:
                return env[node.id]
            return Val(const=2) if node.id == "world_size" else N
        if isinstance(node, ast.Attribute):
            base = self.ev(node.value, env)
            if node.attr == self.c.roles.head and base.kind in ("self", "raw", "ddp"):
                return replace(_head(c.head_trainable), kind="head")
            if node.attr == "module" and base.kind == "ddp":
                return Val(kind="raw")
            if node.attr == self.c.roles.weight:
                return Val(is_w=True)
            if node.attr == self.c.roles.schedule:
                return Val(kind="schedule")
            if base.kind == "defaults":
                return Val(const=c.defaults[node.attr]) if node.attr in c.defaults else N
            if base.kind == "cfg" or getattr(node.value, "id", "") in ("cfg", "config"):
                if node.attr in c.config and node.attr not in self.c.roles.owned:
                    return Val(const=c.config[node.attr])
                return N
            if base.kind in ("self", "raw") and node.attr in self.switches:
                return self.switches[node.attr]
            if base.kind in ("self", "raw") and node.attr in c.class_consts:
                return Val(const=c.class_consts[node.attr])
            if base.kind == "self" and node.attr == "training":
                return Val(const=not self.eval_mode)
            if base.kind == "self":
                return Val(kind="submodule")
            return replace(base, const=UNK, kind=None, tup=None, is_w=False)
        if isinstance(node, ast.IfExp):
            t = self.truth(node.test, env)
            if t is not None:
                return self.ev(node.body if t else node.orelse, env)
            return _join(self.ev(node.body, env), self.ev(node.orelse, env))
        if isinstance(node, ast.UnaryOp):
            v = self.ev(node.operand, env)
            if isinstance(node.op, ast.Not):
                return Val(const=not v.const) if v.const is not UNK else replace(_mix(v), const=UNK)
            if isinstance(node.op, ast.USub) and isinstance(v.const, (int, float)):
                return replace(v, const=-v.const)
            return v
        if isinstance(node, ast.BoolOp):
            vals = [self.ev(x, env) for x in node.values]
            decisive = not isinstance(node.op, ast.And)  # the value that decides: False for and
            if any(v.const is not UNK and bool(v.const) == decisive for v in vals):
                return Val(const=decisive)
            return Val(const=not decisive) if all(v.const is not UNK for v in vals) else _mix(*vals)
        if isinstance(node, ast.Compare):
            vals = [self.ev(x, env) for x in [node.left, *node.comparators]]
            if (s := _schedule_compare(node.ops, vals)) is not None:
                return Val(const=s)
            if all(v.const is not UNK for v in vals):
                v = folding.compare(node.ops, [v.const for v in vals])
                return N if v is folding.NO_VALUE else Val(const=v)
            return replace(_mix(*vals), grad=False, value=False)
        if isinstance(node, ast.BinOp):
            a, b = self.ev(node.left, env), self.ev(node.right, env)
            if isinstance(node.op, ast.Mod) and b.kind == "schedule":
                if a.kind != "step":
                    raise Unsure("schedule test on something other than the step")
                return Val(const=0 if self.world else 1)
            if a.const is not UNK and b.const is not UNK:
                v = folding.binary(node.op, a.const, b.const)
                return N if v is folding.NO_VALUE else Val(const=v)
            if isinstance(node.op, ast.Mult):
                return self.mult(a, b)
            if isinstance(node.op, (ast.Div, ast.FloorDiv)):
                return replace(_mix(a), const=0 if a.zero else UNK) if not b.value else _mix(a, b)
            return _mix(a, b)
        if isinstance(node, ast.Subscript):
            base = self.ev(node.value, env)
            i = getattr(node.slice, "value", None)
            if base.tup is not None and isinstance(node.slice, ast.Constant) and isinstance(i, int):
                return base.tup[i] if -len(base.tup) <= i < len(base.tup) else N
            return replace(_mix(base), kind=None)
        if isinstance(node, (ast.Tuple, ast.List)):
            elts = tuple(self.ev(e, env) for e in node.elts)
            const = tuple(e.const for e in elts) if all(e.const is not UNK for e in elts) else UNK
            return replace(_mix(*elts), tup=elts, const=const)
        if isinstance(node, (ast.GeneratorExp, ast.ListComp, ast.SetComp)):
            if (kind := self.param_comprehension(node, env)) is not None:
                return replace(_head(c.head_trainable), kind=kind)
            inner = dict(env)
            for g in node.generators:
                it = self.ev(g.iter, inner)
                if isinstance(g.target, ast.Name):
                    inner[g.target.id] = replace(it, kind=None)
            return _mix(self.ev(node.elt, inner), *(self.ev(g.iter, env) for g in node.generators))
        if isinstance(node, ast.Call):
            return self.call(node, env)
        if isinstance(node, ast.JoinedStr):
            return N
        if isinstance(node, ast.Lambda):
            raise Unsure("lambda in training code")
        return _mix(*(self.ev(ch, env) for ch in ast.iter_child_nodes(node) if isinstance(ch, ast.expr)))

    def param_comprehension(self, node: ast.GeneratorExp | ast.ListComp | ast.SetComp,
                            env: dict[str, Val]) -> str | None:
        """``[p for p in m.parameters()]`` / ``[p for _, p in m.named_parameters()]``: the same
        parameters (``params_all`` / ``params_head``); ``[f"<head>.{n}" for n, _ in
        m.<head>.named_parameters()]``: the head's parameter names (``head_names``)."""
        if len(node.generators) != 1 or node.generators[0].ifs:
            return None
        g = node.generators[0]
        kind = self.ev(g.iter, env).kind or ""
        targets = g.target.elts if isinstance(g.target, ast.Tuple) else [g.target]
        names = [getattr(t, "id", None) for t in targets]
        elt = node.elt
        if kind in ("params_all", "params_head") and names == [getattr(elt, "id", "")]:
            return kind
        if kind.startswith("named_") and len(names) == 2 and getattr(elt, "id", "") == names[1]:
            return kind[len("named_"):]
        if kind == "named_params_head" and len(names) == 2 and isinstance(elt, ast.JoinedStr) \
                and [type(v) for v in elt.values] == [ast.Constant, ast.FormattedValue] \
                and elt.values[0].value == f"{self.c.roles.head}." \
                and getattr(elt.values[1].value, "id", "") == names[0] and elt.values[1].format_spec is None:
            return "head_names"
        return None

    def mult(self, a: Val, b: Val) -> Val:
        if a.zero or b.zero:
            return Val(const=0, grad=a.grad or b.grad, unsure=a.unsure or b.unsure)
        out = replace(_mix(a, b), is_w=(a.is_w and b.const == 1) or (b.is_w and a.const == 1))
        return replace(out, weighted=True) if (a.is_w and b.value) or (b.is_w and a.value) else out

    def truth(self, test: ast.AST, env: dict[str, Val]) -> bool | None:
        v = self.ev(test, env)
        return None if v.const is UNK else bool(v.const)

    def call(self, node: ast.Call, env: dict[str, Val]) -> Val:
        c, f = self.c, node.func
        q = _dotted(f, c.aliases)
        name = q.rsplit(".", 1)[-1]
        if q in EXIT_CALLS:
            if self.uncertain or self.catching:
                raise Unsure("conditional exit")
            raise _Exit()
        fval = env.get(f.id) if isinstance(f, ast.Name) else None
        if name in EMPTY_MAKERS and self.empty_shape(node, env):
            return Val(kind="empty")
        if isinstance(f, ast.Attribute):
            base, a = self.ev(f.value, env), f.attr
            if a == self.c.roles.head and base.kind in ("self", "raw", "ddp"):
                return self.call_head(node, env)
            if base.kind == "self" and a in c.methods:
                return self.call_method(c.methods[a], node, env)
            if a in ("train", "eval") and base.kind in ("ddp", "raw"):
                mode = a == "eval" or (bool(node.args) and self.ev(node.args[0], env).const is False)
                if mode != self.eval_mode and self.uncertain:
                    raise Unsure("train / eval mode switched under a branch the analysis cannot decide")
                self.eval_mode = mode
                return Val(kind=base.kind)
            if a == "module" and base.kind == "ddp":
                fval = Val(kind="raw")
            elif a == "forward" and base.kind in ("ddp", "raw"):
                fval = base
            elif base.kind in ("ddp", "raw", "head", "submodule") and a in ("parameters", "named_parameters"):
                if base.kind == "submodule":
                    return N
                kind = ("named_" if a == "named_parameters" else "") + (
                    "params_head" if base.kind == "head" else "params_all")
                return replace(_head(c.head_trainable), kind=kind)
            elif base.kind == "ddp" and a == "no_sync":
                return Val(kind="nosync")
            elif base.kind == "ddp" and a == "_set_static_graph":
                self.static_call = True
                return N
            elif base.kind == "ddp" and a not in ("train", "eval", "state_dict", "to", "zero_grad"):
                raise Unsure(f"DDP method {a}")
            elif a == "backward":
                self.event("backward")
                self.backwards.append(base)
                return N
            elif a == "step" and base.kind == "optim":
                self.event("optimizer step")
                return N
            elif a in ("_set_params_and_buffers_to_ignore_for_rank",
                       "_set_params_and_buffers_to_ignore_for_model"):
                names = {e.value for e in getattr(node.args[-1], "elts", []) if isinstance(e, ast.Constant)}
                if names != self.c.roles.head_params and (
                        not node.args or self.ev(node.args[-1], env).kind != "head_names"):
                    raise Unsure("DDP ignores other parameters")
                c.head_ignored = True
                return N
            elif a in NO_GRAD_FUNCS:
                return replace(_mix(base), grad=False)
            elif a in ("mul", "mul_") and node.args:
                return self.mult(base, self.ev(node.args[0], env))
        if fval is not None and fval.kind in ("ddp", "raw"):
            return self.forward(node, fval.kind, env)
        if fval is not None and fval.kind == "head":  # the head passed to a helper
            return self.call_head(node, env)
        if isinstance(f, ast.Name) and f.id in c.funcs and f.id not in env:
            args = [self.ev(a, env) for a in node.args]
            if _starred(node):
                raise Unsure("star arguments to a helper")
            return self.call_fn(c.funcs[f.id], args, {k.arg: self.ev(k.value, env) for k in node.keywords})
        if isinstance(f, ast.Name) and f.id in c.ddp_subclasses and f.id not in env:
            return self.make_ddp(node, env, c.ddp_subclasses[f.id])
        if name == c.roles.config_class and not node.args and not node.keywords:
            return Val(kind="defaults")  # a fresh config: its defaults, not the check's values
        if name == "DistributedDataParallel" or q.endswith(".DistributedDataParallel"):
            return self.make_ddp(node, env)
        if name in c.model_builders:
            return Val(kind="raw")
        if q.startswith("torch.optim.") and "lr_scheduler" not in q:
            self.optimizers.append((node, self.ev(node.args[0], env).kind if node.args else None))
            return Val(kind="optim")
        if "lr_scheduler" in q or name in ("clip_grad_norm_", "clip_grad_value_"):
            if self.in_loop or "lr_scheduler" in q:
                raise Unsure(f"{name} changes the update")
        coll = _collective_name(node, c.aliases)
        if coll and coll not in HARMLESS_COLLECTIVES and not coll.startswith(("get_", "is_")):
            if self.in_loop:
                raise Unsure(f"unrecognised collective {coll} in the training loop")
        elif coll in HARMLESS_COLLECTIVES and (self.uncertain and self.in_loop):
            raise Unsure(f"{coll} reached by some ranks only")
        if name == "getattr" and isinstance(f, ast.Name) and len(node.args) in (2, 3) \
                and isinstance(node.args[1], ast.Constant) and node.args[1].value in c.class_consts \
                and self.ev(node.args[0], env).kind in ("self", "raw"):
            return Val(const=c.class_consts[node.args[1].value])
        if q == "torch.is_grad_enabled":
            return Val(const=not self.nograd)
        if name in ("nullcontext",):
            return Val(kind="null")
        if name in ("no_grad", "inference_mode"):
            return Val(kind="nograd")
        if name in ("float", "int", "bool") and len(node.args) == 1:
            v = self.ev(node.args[0], env)
            return Val(const={"float": float, "int": int, "bool": bool}[name](v.const)) \
                if v.const is not UNK else replace(v, grad=False, kind=None)
        if name in ("list", "tuple") and len(node.args) == 1:
            return self.ev(node.args[0], env)
        if name in NO_GRAD_FUNCS:
            return N
        if name in ("setattr", "partial"):
            raise Unsure(name)
        parts = [self.ev(a, env) for a in node.args] + [self.ev(k.value, env) for k in node.keywords]
        if isinstance(f, ast.Attribute):
            parts.append(self.ev(f.value, env))
        return _mix(*parts)

    def call_method(self, fn: ast.FunctionDef, node: ast.Call, env: dict[str, Val]) -> Val:
        """``self.<method>(...)`` of the model class: inlined (a static method binds no self)."""
        decorators = [getattr(d, "id", None) for d in fn.decorator_list]
        if decorators not in ([], ["staticmethod"]) or _starred(node):
            raise Unsure(f"call of the model's method {fn.name}")
        args = [self.ev(a, env) for a in node.args]
        kwargs = {k.arg: self.ev(k.value, env) for k in node.keywords}
        return self.call_fn(fn, args, kwargs, bound=None if decorators else {"self": Val(kind="self")})

    def call_head(self, node: ast.Call, env: dict[str, Val]) -> Val:
        """The head applied to its input: a path to its parameters, and a contribution unless
        the input is an empty batch (``head(x.new_zeros((0, n))).sum()`` is exactly 0)."""
        args = [self.ev(a, env) for a in node.args]
        if len(args) == 1 and args[0].kind == "empty":
            return Val(grad=self.c.head_trainable)
        return _head(self.c.head_trainable)

    def empty_shape(self, node: ast.Call, env: dict[str, Val]) -> bool:
        """A tensor maker whose shape (a tuple or the positional sizes) has a dimension 0."""
        dims = node.args
        if len(dims) == 1 and isinstance(dims[0], (ast.Tuple, ast.List)):
            dims = dims[0].elts
        return any(self.ev(d, env).const == 0 for d in dims) and not _starred(node)

    def make_ddp(self, node: ast.Call, env: dict[str, Val], subclass: ast.ClassDef | None = None) -> Val:
        """DDP(model, ...) or a workspace subclass of DDP: only one whose forward hands its
        arguments to ``self.module`` (DDP's forward, so its reducer, never runs: a local
        forward) is modelled."""
        self.event("DDP construction")
        local = False
        if subclass is not None:
            methods = {n.name: n for n in subclass.body
                       if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
            if set(methods) - {"forward"} or any(not isinstance(n, (ast.FunctionDef, ast.Expr, ast.Pass))
                                                 for n in subclass.body):
                raise Unsure(f"DDP subclass {subclass.name} the analysis does not model")
            local = "forward" in methods
            if local and not _hands_to_module(methods["forward"]):
                raise Unsure(f"forward of the DDP subclass {subclass.name}")
        kws = {k.arg: k.value for k in node.keywords if k.arg}
        for k in node.keywords:
            if k.arg is None:
                d = k.value
                if isinstance(d, ast.Name):
                    d = self.c.dicts.get(d.id)
                if isinstance(d, ast.Dict) and all(isinstance(x, ast.Constant) for x in d.keys):
                    kws.update({x.value: v for x, v in zip(d.keys, d.values, strict=True)})
                elif isinstance(d, ast.Call) and getattr(d.func, "id", "") == "dict":
                    kws.update({x.arg: x.value for x in d.keywords if x.arg})
                else:
                    raise Unsure("DDP options the analysis cannot read")
        opts = {}
        for opt in ("find_unused_parameters", "static_graph"):
            t = self.truth(kws[opt], env) if opt in kws else False
            if t is None:
                raise Unsure(f"{opt} of unknown value")
            opts[opt] = t
        self.ddp.append({**opts, "local_forward": True} if local else opts)
        return Val(kind="ddp")

    def forward(self, node: ast.Call, kind: str, env: dict[str, Val]) -> Val:
        self.event("forward")
        c = self.c
        if kind == "ddp" and any(d.get("local_forward") for d in self.ddp):
            kind = "raw"  # the subclass's forward calls the module itself
        if self.in_loop:
            self.forwards.append((kind, self.nosync))
        if c.forward is None:
            raise Unsure("no model forward to follow")
        if _starred(node):
            raise Unsure("star arguments to the model")
        args = [self.ev(a, env) for a in node.args]
        kwargs = {k.arg: self.ev(k.value, env) for k in node.keywords}
        out = self.call_fn(c.forward, args, kwargs, bound={"self": Val(kind="self")})
        return replace(out, kind=None)

    # -- statements -------------------------------------------------------------------------
    def assign(self, t: ast.AST, v: Val, env: dict[str, Val]) -> None:
        if isinstance(t, ast.Name):
            env[t.id] = v
        elif isinstance(t, (ast.Tuple, ast.List)):
            for i, e in enumerate(t.elts):
                sub = v.tup[i] if v.tup is not None and i < len(v.tup) else replace(v, tup=None, kind=None)
                self.assign(e, sub, env)
        elif isinstance(t, ast.Attribute):
            base = self.ev(t.value, env)
            if base.kind == "ddp" or (base.kind in ("raw", "self") and t.attr in self.c.class_consts):
                raise Unsure(f"assignment to {t.attr}")
            if base.kind in ("raw", "self") and isinstance(t.value, (ast.Name, ast.Attribute)):
                if self.uncertain:  # a switch set on one side only: its value after is unknown
                    raise Unsure(f"the model's {t.attr} set under a branch the analysis cannot decide")
                self.switches[t.attr] = v  # read back as self.<attr> by the forward

    def run(self, body: list[ast.stmt], env: dict[str, Val]) -> None:
        for st in body:
            self.stmt(st, env)

    def branch(self, body, orelse, env) -> None:
        """Run both sides of an undecided branch; variables that differ become unsure."""
        self.uncertain += 1
        a, b = dict(env), dict(env)
        for side, e in ((body, a), (orelse, b)):
            try:
                self.run(side, e)
            except (_Return, _Continue, _Exit):
                raise Unsure("return, continue or exit under an undecided branch") from None
        self.uncertain -= 1
        for k in set(a) | set(b):
            env[k] = _join(a.get(k, N), b.get(k, N))

    def stmt(self, st: ast.stmt, env: dict[str, Val]) -> None:
        if isinstance(st, ast.Assign):
            v = self.ev(st.value, env)
            if isinstance(st.value, ast.Dict) and isinstance(st.targets[0], ast.Name):
                self.c.dicts[st.targets[0].id] = st.value
            for t in st.targets:
                self.assign(t, v, env)
        elif isinstance(st, ast.AnnAssign) and st.value is not None:
            self.assign(st.target, self.ev(st.value, env), env)
        elif isinstance(st, ast.AugAssign):
            cur, inc = self.ev(st.target, env), self.ev(st.value, env)
            new = self.mult(cur, inc) if isinstance(st.op, ast.Mult) else _mix(cur, inc)
            self.assign(st.target, new, env)
        elif isinstance(st, ast.If):
            t = self.truth(st.test, env)
            if t is None:
                self.branch(st.body, st.orelse, env)
            else:
                self.run(st.body if t else st.orelse, env)
        elif isinstance(st, (ast.With, ast.AsyncWith)):
            saved = (self.nosync, self.nograd)
            for item in st.items:
                v = self.ev(item.context_expr, env)
                self.nosync = self.nosync or v.kind == "nosync"
                self.nograd = self.nograd or v.kind == "nograd"
            try:
                self.run(st.body, env)
            finally:
                self.nosync, self.nograd = saved
        elif isinstance(st, ast.Try):
            saved = self.catching
            self.catching = self.catching or _swallows(st)
            try:
                self.run(st.body, env)
            finally:
                self.catching = saved
            self.run(st.orelse, env)
            self.run(st.finalbody, env)
        elif isinstance(st, ast.Expr):
            self.ev(st.value, env)
        elif isinstance(st, ast.Return):
            raise _Return(self.ev(st.value, env))
        elif isinstance(st, ast.Continue) and self.in_loop:
            raise _Continue()
        elif isinstance(st, ast.Break) and self.in_loop:
            raise Unsure("break in the training loop")
        elif isinstance(st, ast.For):
            self.for_loop(st, env)
        elif isinstance(st, ast.While):
            if self.c.has_backward(st):
                raise Unsure("while-loop training")
            self.run(st.body, env)
        elif isinstance(st, ast.Raise) and not self.uncertain:
            raise Unsure("raises on a path the analysis takes")

    def for_loop(self, st: ast.For, env: dict[str, Val]) -> None:
        it = self.ev(st.iter, env)
        if not self.c.has_backward(st) and self.manual_reduce(st, it):
            return
        if not self.in_loop and self.c.has_backward(st):
            if self.loop_seen or not isinstance(st.target, ast.Name):
                raise Unsure("more than one training loop")
            self.loop_seen, self.in_loop = True, True
            env[st.target.id] = Val(kind="step")
            try:
                self.run(st.body, env)
            except _Continue:
                pass
            self.in_loop = False
            return
        self.assign(st.target, replace(it, kind=None, tup=None), env)
        try:
            self.run(st.body, env)
        except _Continue:
            pass

    def manual_reduce(self, st: ast.For, it: Val) -> bool:
        """``for p in <params>: [if p.grad is not None:] all_reduce(p.grad); p.grad /= ws``
        (outside the training loop, ``all_reduce(p)`` averages parameters, no gradient)."""
        if not isinstance(st.target, ast.Name):
            return False
        p = st.target.id
        calls = [n for n in ast.walk(st) if isinstance(n, ast.Call) and
                 _collective_name(n, self.c.aliases) in ("all_reduce", "all_reduce_coalesced")]
        if not calls:
            return False
        self.event("gradient all-reduce")
        grads = [a for n in calls for a in n.args[:1]]
        if not self.in_loop and grads and all(_dotted(g, {}) in (p, f"{p}.data") for g in grads) \
                and it.kind in ("params_all", "params_head"):
            return True  # parameters averaged outside the training loop: no gradient is
        if not all(isinstance(g, ast.Attribute) and _dotted(g, {}) in (f"{p}.grad", f"{p}.grad.data")
                   for g in grads) or it.kind not in ("params_all", "params_head"):
            raise Unsure("all-reduce of something other than every gradient")
        avg = any((isinstance(n, ast.Attribute) and n.attr in ("AVG", "div_"))
                  or (isinstance(n, (ast.AugAssign, ast.BinOp)) and isinstance(n.op, ast.Div))
                  for n in ast.walk(st))
        self.reduces.append(("all" if it.kind == "params_all" else "head", avg))
        return True


# --------------------------------------------------------------------------------------------
# workspace facts
# --------------------------------------------------------------------------------------------
class Ctx:
    """Workspace facts for one interpretation: functions by name (the training module's win),
    the model's forward, whether the head exists, is trainable, sees a detached encoder."""

    def __init__(self, trees: dict[str, ast.Module], config: dict[str, object], roles: Roles,
                 train_path: str):
        self.roles = roles
        self.config = config
        self.aliases: dict[str, str] = {}
        self.funcs: dict[str, ast.FunctionDef] = {}
        for name in sorted(trees, key=lambda p: p == train_path):  # the training module wins
            if name in trees:
                self.aliases.update(_aliases(trees[name]))
                self.funcs.update({n.name: n for n in trees[name].body if isinstance(n, ast.FunctionDef)})
        model = trees.get(roles.model_module)
        classes = [n for n in nodes(model) if isinstance(n, ast.ClassDef)] if model else []
        self.forward = None
        self.methods: dict[str, ast.FunctionDef] = {}  # of the model class, inlined for self.<m>()
        self.class_consts: dict[str, object] = {}  # its literal class attributes
        self.head_defined = False
        for cls in classes:
            init = _method(cls, "__init__")
            if init and any(isinstance(t, ast.Attribute) and t.attr == roles.head
                            for st in ast.walk(init) if isinstance(st, ast.Assign) for t in st.targets):
                self.head_defined = True
                self.forward = _method(cls, "forward")
                self.methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)
                                and n.name not in ("forward", "__init__")}
                self.class_consts = _class_consts(cls)
        if self.forward is None and classes:
            self.forward = next((m for cl in classes if (m := _method(cl, "forward"))), None)
        self.ddp_subclasses = {
            n.name: n for tree in trees.values() for n in tree.body if isinstance(n, ast.ClassDef)
            and any(_dotted(b, self.aliases).endswith("DistributedDataParallel") for b in n.bases)}
        self.model_builders = {c.name for c in classes} | {roles.builder}
        self.defaults = config_defaults(trees.get(roles.config_module), roles.config_class)
        self.funcs.pop(roles.builder, None)
        self.head_trainable = self.head_defined and not _frozen_head(list(trees.values()), roles.head)
        self.encoder_detached = self.forward is not None and any(
            isinstance(n, ast.Call) and getattr(n.func, "attr", "") == roles.head
            and any(_mentions_attr(a, "detach") for a in n.args)
            for n in ast.walk(self.forward))
        self.head_ignored = False
        self.dicts: dict[str, ast.Dict] = {}
        self._bw: dict[str, bool] = {}

    def has_backward(self, node: ast.AST, seen: frozenset = frozenset()) -> bool:
        for n in ast.walk(node):
            if isinstance(n, ast.Attribute) and n.attr == "backward":
                return True
            name = getattr(n.func, "id", None) if isinstance(n, ast.Call) else None
            if name in self.funcs and name not in seen and self.has_backward(self.funcs[name], seen | {name}):
                return True
        return False


def _hands_to_module(fn: ast.FunctionDef) -> bool:
    """``def forward(self, *inputs, **kwargs): return self.module(*inputs, **kwargs)`` (its
    parameters passed on in order, a docstring allowed)."""
    body = [st for st in fn.body if not (isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant))]
    if len(body) != 1 or not isinstance(body[0], ast.Return):
        return False
    call = body[0].value
    if not isinstance(call, ast.Call):
        return False
    a = fn.args
    if a.posonlyargs or a.kwonlyargs or a.defaults or not a.args or a.args[0].arg != "self":
        return False
    want = [p.arg for p in a.args[1:]] + ([f"*{a.vararg.arg}"] if a.vararg else [])
    got = [f"*{x.value.id}" if isinstance(x, ast.Starred) and isinstance(x.value, ast.Name)
           else getattr(x, "id", None) for x in call.args]
    kws = [k.value.id if k.arg is None and isinstance(k.value, ast.Name) else None for k in call.keywords]
    return (_dotted(call.func, {}) == "self.module" and got == want
            and kws == ([a.kwarg.arg] if a.kwarg else []))


def _class_consts(cls: ast.ClassDef) -> dict[str, object]:
    """Literal class attributes (``conditional = ("recon_head",)``) no method assigns on self."""
    out: dict[str, object] = {}
    for st in cls.body:
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
            try:
                out[st.targets[0].id] = ast.literal_eval(st.value)
            except ValueError:
                continue
    stored = {n.attr for n in ast.walk(cls) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)}
    return {k: v for k, v in out.items() if k not in stored}


def config_defaults(tree: ast.Module | None, class_name: str) -> dict[str, object]:
    """Literal defaults of the config class (fields its __post_init__ sets are left out)."""
    out: dict[str, object] = {}
    for node in nodes(tree) if tree else []:
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            for st in node.body:
                if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name) and st.value is not None:
                    try:
                        out[st.target.id] = ast.literal_eval(st.value)
                    except ValueError:
                        out[st.target.id] = UNK
                elif isinstance(st, ast.FunctionDef) and st.name == "__post_init__":
                    for n in ast.walk(st):
                        if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store):
                            out[n.attr] = UNK
    return {k: v for k, v in out.items() if v is not UNK}


def _frozen_head(trees: list[ast.Module], head: str) -> bool:
    """requires_grad switched off for the head (the module or its parameters)."""
    def off(n: ast.AST) -> bool:
        return (isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "requires_grad_" and n.args
                and isinstance(n.args[0], ast.Constant) and not n.args[0].value) or (
            isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant) and n.value.value is False
            and any(isinstance(t, ast.Attribute) and t.attr == "requires_grad" for t in n.targets))
    def frozen_in(tree: ast.Module) -> bool:
        for node in nodes(tree):
            if off(node) and _mentions_attr(node, head):
                return True
            if isinstance(node, ast.For) and _mentions_attr(node.iter, head) \
                    and any(off(n) for n in ast.walk(node)):
                return True
        return False

    for tree in trees:
        mod = owner(tree)  # a parsed workspace module: the answer is memoised on it
        if mod is None:
            found = frozen_in(tree)
        elif (found := mod.facts.get(("frozen_head", head))) is None:
            found = mod.facts[("frozen_head", head)] = frozen_in(tree)
        if found:
            return True
    return False
