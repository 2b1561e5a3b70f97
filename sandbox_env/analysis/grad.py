"""Is autograd recording at this call, and which values keep a forward graph alive.

``Run`` interprets, abstractly, what a check's driver runs: the workspace modules are imported,
then the training entry point is called with the config the driver builds. Calls are followed
into helpers, methods, properties and other workspace files (classes, dataclasses, closures,
decorators, ``@contextmanager`` generators: the with-block runs at their one yield, in the modes
they set); the interpretation tracks whether autograd records (no_grad / inference_mode /
set_grad_enabled / enable_grad as a with-block, a decorator or a call that toggles it), whether
the parameters require grad (``model.requires_grad_``, or each parameter's in a loop over
``model.parameters()``; flags a context manager puts back unseen restore what it found), whether
the model is in train or eval mode, and which values carry a forward graph (.item() / .detach()
/ float() / ops under no_grad drop it; lists, sums and dicts keep it). It records every forward
(train or eval kind, its batch loop, the conditions it runs under, low precision; a ``continue``
under a condition puts the rest of the iteration under it), every value that a loop accumulates
with its graph (a leak: that graph stays referenced), batch loops whose forward runs only on some
iterations (a condition on the loop's index or counters: ``Loop.skips``), one batch's loss
reported after its loop instead of an accumulation (``Run.once``), exits and backward calls
without a graph. Anything on that path it does not understand raises Unsure.
"""

import ast
import weakref
from dataclasses import dataclass, field
from functools import reduce

from . import Unsure, folding
from .calls import bind
from .exits import EXIT_CALLS
from .workspace import module

GT, GE, T = "Gt", "Ge", "T"  # graph of a train-mode / eval-mode forward; tensor or number, no graph
CRIT, SUB = "crit", "submodule"  # a torch module held in a variable; a submodule of the model
PARAMS, PARAM = "params", "param"  # model.parameters() (or a list of it); one parameter tensor
DETACH = {"item", "detach", "detach_", "tolist", "__float__"}
KEEPS = {"cpu", "to", "contiguous", "float", "view", "reshape", "squeeze", "unsqueeze", "flatten",
         "view_as", "reshape_as", "expand", "t", "type", "cuda"}  # may return (a view of) the input
MUTATORS = {"append", "extend", "insert", "add", "update", "appendleft", "setdefault"}
EXITS = EXIT_CALLS | {"os.kill", "SystemExit"}
PLAIN = {"float", "int", "round", "bool", "len", "str", "repr", "format", "abs"}
QUIET = {"print", "isinstance", "hasattr", "range", "type", "id", "super", "open", "callable"}
LOWP = {"float16", "half", "bfloat16"}
CATCH_ALL = {"RuntimeError", "MemoryError", "Exception", "BaseException", "OutOfMemoryError"}


def fold(op, *vals):
    """A constant operation's value (Const), or None."""
    v = folding.binary(op, *vals) if isinstance(op, ast.operator) else folding.unary(op, *vals)
    return None if v is folding.NO_VALUE else Const(v)


def is_graph(v) -> bool:
    return v in (GT, GE)


def join(a, b):
    if a == b:
        return a
    if GE in (a, b) or GT in (a, b):
        return GE if GE in (a, b) else GT
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
        return tuple(map(join, a, b))
    return None


def graph_of(*vals):
    """The graph any of ``vals`` (or their elements) carries, else None."""
    gs = [graph_of(*v) if isinstance(v, tuple) else v for v in vals]
    return reduce(join, [g for g in gs if is_graph(g)], None)


@dataclass(frozen=True)
class Const:
    value: object


@dataclass(frozen=True)
class Ext:  # something outside the workspace, by dotted name ("torch.no_grad")
    name: str


@dataclass(frozen=True)
class Mod:
    path: str


@dataclass(frozen=True)
class Cls:
    node: ast.ClassDef
    path: str
    bases: tuple


@dataclass(eq=False)
class Obj:  # an instance of a workspace class; ``module``: an nn.Module (calling it is a forward)
    cls: Cls
    attrs: dict = field(default_factory=dict)
    module: bool = False


@dataclass(frozen=True, eq=False)
class Fn:
    node: ast.FunctionDef
    path: str
    self_: object = None
    closure: dict | None = None


@dataclass(frozen=True)
class Ctx:  # a context manager understood: the grad mode it sets (None: unchanged), autocast
    grad: bool | None = None
    autocast: bool = False


@dataclass(frozen=True)
class Zip:  # zip(...) over the model's parameters: the element of each iteration
    elems: tuple


@dataclass(frozen=True, eq=False)
class Iter:
    base: object
    kind: str  # "enum" | "trunc"


@dataclass(eq=False)
class Loop:
    batch: bool  # iterates a loader
    names: set  # the loop's index and counters: a stop conditioned on them truncates
    depth: int  # position in the context stack
    stops: list = field(default_factory=list)
    kinds: set = field(default_factory=set)  # forward kinds seen inside ("train" / "eval")
    backward: bool = False
    index: set = field(default_factory=set)  # its enumerate index and counters
    skips: bool = False  # a forward runs under a condition on ``index``: some batches are skipped


@dataclass
class Frame:
    path: str
    env: dict
    closure: dict | None = None
    fresh: set = field(default_factory=set)  # names bound in the current loop iteration
    loops: list = field(default_factory=list)
    rets: list = field(default_factory=list)
    globals_: set = field(default_factory=set)
    once: set = field(default_factory=set)  # names holding one batch's loss (bound in a batch loop)


def grad_call_mode(name: str, arg) -> bool | str | None:
    """Grad mode set by the torch callable ``name`` (a context manager, decorator or call):
    False / True, None for no change, "?" for an argument that does not resolve."""
    last = name.rsplit(".", 1)[-1]
    if last == "no_grad":
        return False
    if last == "enable_grad":
        return True
    if last == "inference_mode":
        return None if isinstance(arg, Const) and not arg.value else False
    if last in ("set_grad_enabled", "_set_grad_enabled"):
        return bool(arg.value) if isinstance(arg, Const) else "?"
    return None


def _tree(path: str, text: str) -> ast.Module:
    """The parsed module's tree (shared, never changed), or the parser's SyntaxError."""
    mod = module(path, text)
    return mod.tree if mod is not None else ast.parse(text)


# function node -> does it yield or await (the trees are shared parses: their nodes stay put)
_SUSPENDS: weakref.WeakKeyDictionary[ast.AST, bool] = weakref.WeakKeyDictionary()


def _is_contextmanager(v) -> bool:
    return isinstance(v, Ext) and v.name.rsplit(".", 1)[-1] == "contextmanager"


def _once_in(stmts: list, target: ast.AST) -> bool:
    """Is ``target`` an expression statement of ``stmts``, or of the body of a with / try there
    (a path that runs it exactly once, absent exceptions)?"""
    for st in stmts:
        if isinstance(st, ast.Expr) and st.value is target:
            return True
        if isinstance(st, (ast.With, ast.Try)) and _once_in(st.body, target):
            return True
    return False


def _suspends(node: ast.AST) -> bool:
    found = _SUSPENDS.get(node)
    if found is None:
        found = _SUSPENDS[node] = any(isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await))
                                      for n in ast.walk(node))
    return found


class Run:
    """The abstract run of the driver: import the live modules, call fit(Config(...))."""

    def __init__(self, files: dict[str, str]) -> None:
        self.trees = {p: _tree(p, t) for p, t in files.items() if p.endswith(".py")}
        self.mods = {p[:-3].replace("/", ".").removesuffix(".__init__"): p for p in self.trees}
        self.globals: dict[str, dict] = {}
        self.ctx: list = []  # ("loop", Loop) | ("cond", test) | ("try", catches) | ("handler",)
        self.stack: list = []
        self.grad, self.training, self.frozen, self.lowp, self.autocast = True, True, False, False, 0
        self.forwards: list = []  # (kind, batch Loop or None, conditions, low precision, in an outer loop)
        self.leaks: list = []  # (graph, batch Loop or None, caught, certain)
        self.loops: list[Loop] = []
        self.exits: list = []  # in an exception handler?
        self.crash = False
        self.doubts: list[str] = []  # reasons not to say "fixed"
        self.once: list[int] = []  # lines reporting one batch's loss (returned or recorded) as a result
        self._skip: ast.expr | None = None  # the test of an ``if ...: continue`` just run
        self._on_yield: list = []  # per @contextmanager generator running: its with-block

    # ------------------------------------------------------------------ modules and names
    def module(self, path: str) -> dict:
        if path not in self.globals:
            g = self.globals[path] = {"__name__": Const(path[:-3].replace("/", "."))}
            self.block(self.trees[path].body, Frame(path, g))
        return self.globals[path]

    def bind_import(self, node, env: dict) -> None:
        if isinstance(node, ast.Import):
            for a in node.names:
                name = a.name if a.asname else a.name.split(".")[0]
                p = self.mods.get(name)
                env[a.asname or name] = Mod(p) if p else Ext(name)
            return
        if node.level or any(a.name == "*" for a in node.names):
            raise Unsure("relative or star import")
        p = self.mods.get(node.module)
        for a in node.names:
            if p is None:
                env[a.asname or a.name] = Ext(f"{node.module}.{a.name}")
            elif a.name in self.module(p):
                env[a.asname or a.name] = self.module(p)[a.name]
            elif f"{node.module}.{a.name}" in self.mods:
                env[a.asname or a.name] = Mod(self.mods[f"{node.module}.{a.name}"])
            else:
                raise Unsure(f"cannot import {a.name} from {node.module}")

    def lookup(self, name: str, fr: Frame):
        for scope in (fr.env, fr.closure or {}, self.globals.get(fr.path, {})):
            if name in scope:
                return scope[name]
        return Ext(name)

    def attr(self, base, name: str):
        if isinstance(base, Ext):
            return Ext(f"{base.name}.{name}")
        if isinstance(base, Mod):
            return self.module(base.path).get(name, Ext(name))
        if isinstance(base, Obj):
            if base.module and name == "training":
                return Const(self.training)
            if name in base.attrs:
                return base.attrs[name]
            node, path = self.member(base.cls, name)
            if isinstance(node, ast.FunctionDef):
                fn = Fn(node, path, base)
                if any(getattr(d, "id", "") == "property" for d in node.decorator_list):
                    return self.invoke(fn, [], {})
                return fn
            if node is not None:
                return self.eval(node, Frame(path, {}))
            return SUB if base.module else None
        if base == PARAM:
            return T
        if is_graph(base):
            return T if name in ("data", "grad", "shape", "dtype", "device", "requires_grad",
                                 "grad_fn", "ndim", "is_leaf") else base
        return T if base == T else None

    def member(self, cls: Cls, name: str):
        """A method (FunctionDef) or class-level default (expression) of a workspace class."""
        for s in cls.node.body:
            if isinstance(s, ast.FunctionDef) and s.name == name:
                return s, cls.path
            if isinstance(s, ast.AnnAssign) and getattr(s.target, "id", "") == name and s.value:
                return s.value, cls.path
            if isinstance(s, ast.Assign) and any(getattr(t, "id", "") == name for t in s.targets):
                return s.value, cls.path
        for b in cls.bases:
            if isinstance(b, Cls):
                found = self.member(b, name)
                if found[0] is not None:
                    return found
        return None, None

    # ------------------------------------------------------------------ expressions
    def gop(self, g):
        """The result of a tensor op on graph ``g`` under the current grad mode."""
        if self.grad is None:
            raise Unsure("grad mode unknown")
        return g if self.grad else T

    def eval(self, node, fr: Frame):
        if node is None:
            return Const(None)
        if isinstance(node, ast.Constant):
            return Const(node.value)
        if isinstance(node, ast.Name):
            return self.lookup(node.id, fr)
        if isinstance(node, ast.Attribute):
            return self.attr(self.eval(node.value, fr), node.attr)
        if isinstance(node, ast.Call):
            return self.call(node, fr)
        if isinstance(node, ast.Subscript):
            base, idx = self.eval(node.value, fr), self.eval(node.slice, fr)
            if isinstance(base, tuple) and isinstance(idx, Const) and isinstance(idx.value, int):
                return base[idx.value] if -len(base) <= idx.value < len(base) else None
            return base if is_graph(base) else (T if base == T else graph_of(base))
        if isinstance(node, (ast.BinOp, ast.UnaryOp)):
            vals = [self.eval(n, fr) for n in ((node.left, node.right) if isinstance(node, ast.BinOp)
                                               else (node.operand,))]
            if graph_of(*vals):
                return self.gop(graph_of(*vals))
            if all(isinstance(v, Const) for v in vals):
                return fold(node.op, *[v.value for v in vals])
            return T if T in vals else None
        if isinstance(node, ast.BoolOp):
            vals = [self.truth(self.eval(v, fr)) for v in node.values]
            stop = isinstance(node.op, ast.Or)
            if stop in vals:
                return Const(stop)
            return Const(not stop) if None not in vals else None
        if isinstance(node, ast.Compare):
            vals = [self.eval(n, fr) for n in (node.left, *node.comparators)]
            if all(isinstance(v, Const) for v in vals):
                v = folding.compare(node.ops, [v.value for v in vals])
                return None if v is folding.NO_VALUE else Const(v)
            if len(vals) == 2 and isinstance(node.ops[0], (ast.Is, ast.IsNot)) and Const(None) in vals:
                other = vals[1] if vals[0] == Const(None) else vals[0]
                if isinstance(other, (Obj, Fn, Cls, Mod)) or is_graph(other) or other == T:
                    return Const(isinstance(node.ops[0], ast.IsNot))
            return T if any(v == T or is_graph(v) for v in vals) else None
        if isinstance(node, ast.IfExp):
            t = self.truth(self.eval(node.test, fr))
            if t is not None:
                return self.eval(node.body if t else node.orelse, fr)
            return join(self.eval(node.body, fr), self.eval(node.orelse, fr))
        if isinstance(node, ast.Tuple):
            return tuple(self.eval(e, fr) for e in node.elts)
        if isinstance(node, (ast.List, ast.Set)):
            return graph_of(*[self.eval(e, fr) for e in node.elts])
        if isinstance(node, ast.Dict):
            for v in node.values:
                self._once(v, fr, record=True)
            return graph_of(*[self.eval(v, fr) for v in node.values])
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            return self.comprehension(node, fr)
        if isinstance(node, ast.Starred):
            return self.eval(node.value, fr)
        if isinstance(node, ast.NamedExpr):
            v = fr.env[node.target.id] = self.eval(node.value, fr)
            return v
        if isinstance(node, (ast.JoinedStr, ast.Lambda, ast.Slice)):
            return None
        raise Unsure(f"expression {type(node).__name__}")

    @staticmethod
    def truth(v) -> bool | None:
        if isinstance(v, Const):
            return bool(v.value)
        return True if isinstance(v, (Obj, Fn, Cls, Mod)) else None

    def call(self, node: ast.Call, fr: Frame):
        args = [self.eval(a, fr) for a in node.args]
        kw = {k.arg: self.eval(k.value, fr) for k in node.keywords}
        f = node.func
        if isinstance(f, ast.Attribute):
            recv = self.eval(f.value, fr)
            if isinstance(recv, (Ext, Mod)) or (isinstance(recv, Obj) and not recv.module):
                return self.apply(self.attr(recv, f.attr), args, kw, fr)
            return self.method(recv, f.attr, args, kw, recv_node=f.value, fr=fr)
        return self.apply(self.eval(f, fr), args, kw, fr)

    def apply(self, callee, args, kw, fr: Frame):
        if isinstance(callee, Fn):
            return self.invoke(callee, args, kw)
        if isinstance(callee, Cls):
            return self.instantiate(callee, args, kw)
        if isinstance(callee, Obj) and callee.module:
            return self.forward()
        if isinstance(callee, Ext):
            return self.ext(callee.name, args, kw)
        if callee == SUB or isinstance(callee, Obj):
            raise Unsure("call of a submodule or object")
        g = graph_of(*args, *kw.values())  # a loss module, or a callable the analysis cannot see
        return self.gop(g) if g else (T if callee == CRIT else None)

    def method(self, recv, name, args, kw, *, recv_node, fr: Frame):
        g = graph_of(*args, *kw.values())
        if isinstance(recv, Obj):  # the model
            if name == "forward" or name in recv.attrs:  # bypasses the check's hooks / a submodule
                raise Unsure(f"model.{name}(...)")
            node, path = self.member(recv.cls, name)
            if node is not None:
                return self.invoke(Fn(node, path, recv), args, kw)
            if name in ("eval", "train"):
                self.training = name == "train" and (not args or self.truth(args[0]))
            elif name == "requires_grad_":
                self.frozen = not (not args or self.truth(args[0]))
            elif name == "parameters" and not args and not kw:
                return PARAMS
            elif name in ("half", "bfloat16") or (name == "to" and any(
                    isinstance(a, Ext) and a.name.rsplit(".", 1)[-1] in LOWP for a in (*args, *kw.values()))):
                self.lowp = True
            elif name in ("double", "register_forward_hook", "register_forward_pre_hook"):
                raise Unsure(f"model.{name}")
            elif name not in ("to", "float", "cpu", "cuda"):
                return None  # parameters(), state_dict(), zero_grad(), ...
            return recv
        if recv == PARAM:  # a parameter: requires_grad_(flag) freezes or thaws (all: a loop over them)
            if name == "requires_grad_":
                self.toggle(args[0] if args else kw.get("requires_grad", Const(True)))
            return T
        if is_graph(recv):
            if name in DETACH:
                return T
            if name == "backward":
                return self.backward(recv)
            if name in ("numpy", "requires_grad_", "retain_grad", "register_hook"):
                raise Unsure(f"tensor.{name} on a graph")
            return recv if name in KEEPS or self.grad else self.gop(recv)
        if recv == T:
            if name == "backward":
                return self.backward(T)
            if g and name.endswith("_"):  # in-place op accumulating a graph: acc.add_(loss)
                self.store(recv_node, self.gop(g), fr, accumulate=True)
            return self.gop(g) if g else T
        if name in MUTATORS and g:
            self.store(recv_node, g, fr, accumulate=True)
        return None

    def ext(self, name, args, kw):
        root, last = name.split(".")[0], name.rsplit(".", 1)[-1]
        vals = [*args, *kw.values()]
        g = graph_of(*vals)
        if name in EXITS:
            self.exits.append(any(c[0] == "handler" for c in self.ctx))
            return None
        if root == "torch":
            first = args[0] if args else kw.get("mode", Const(True))
            mode = grad_call_mode(name, first)
            if last in ("no_grad", "enable_grad", "inference_mode", "set_grad_enabled", "_set_grad_enabled"):
                ctx = Ctx(None if mode == "?" else mode)
                if "set_grad_enabled" in last:  # takes effect when called
                    self.grad = None if mode == "?" else mode
                return ctx
            if last == "is_grad_enabled":
                return Const(self.gop(True) is True)
            if last == "autocast":
                return Ctx(autocast=self.truth(kw.get("enabled", Const(True))) is not False)
            if last[:1].isupper():
                return CRIT if name.startswith("torch.nn.") and ".utils" not in name else None
            if last in LOWP:
                return Ext(name)
            return self.gop(g) if g else T
        if name in PLAIN:
            if len(args) == 1 and isinstance(args[0], Const) and name in ("float", "int"):
                return Const(float(args[0].value) if name == "float" else int(args[0].value))
            return T
        if name in ("min", "max"):
            return reduce(join, vals) if len(args) > 1 else (graph_of(*args) or T)
        if name == "sum":
            return self.gop(g) if g else T
        if name in ("list", "tuple", "sorted", "reversed", "iter", "next") or last == "tqdm":
            return args[0] if args else None
        if name == "enumerate":
            return Iter(args[0], "enum")
        if last == "islice":
            return Iter(args[0], "trunc")
        if name == "zip":
            if any(self.loader(a) for a in args):
                raise Unsure("zip over a loader")
            return Zip(tuple(PARAM if a == PARAMS else None for a in args)) if PARAMS in args else None
        if name == "getattr" and len(args) >= 2 and isinstance(args[1], Const):
            v = self.attr(args[0], str(args[1].value))
            return args[2] if v is None and len(args) > 2 else v
        if root == "math":
            return T
        if root in ("statistics", "numpy") and g:
            raise Unsure(f"{name} of graph-carrying values")
        if name in QUIET or root in ("logging", "gc", "time", "warnings", "os", "sys", "json",
                                     "functools", "pathlib", "statistics", "numpy", "random"):
            return None
        return self.gop(g) if g else None  # a callable outside the workspace

    def forward(self):
        if self.grad is None or self.training is None or self.frozen is None:
            raise Unsure("grad mode, train mode or requires_grad unknown at a forward")
        grad = self.grad and not self.frozen
        kind = "train" if self.training and grad else "eval"
        loop = self.batch_loop()
        conds = [c[1] for c in self.ctx if c[0] == "cond"]
        outer = any(c[0] == "loop" and not c[1].batch for c in self.ctx)
        if loop and any(c[0] == "cond" and any(isinstance(n, ast.Name) and n.id in loop.index
                                               for n in ast.walk(c[1])) for c in self.ctx[loop.depth:]):
            loop.skips = True
        self.forwards.append((kind, loop, conds, self.lowp or self.autocast > 0, outer))
        if loop:
            loop.kinds.add(kind)
        return (GT if self.training else GE) if grad else T

    def backward(self, v):
        if v == T:
            self.crash = True  # RuntimeError: element 0 of tensors does not require grad
        loop = self.batch_loop()
        if loop:
            loop.backward = True

    def batch_loop(self) -> Loop | None:
        return next((c[1] for c in reversed(self.ctx) if c[0] == "loop" and c[1].batch), None)

    @staticmethod
    def loader(v) -> bool:
        return isinstance(v, Obj) and not v.module and any(
            isinstance(s, ast.FunctionDef) and s.name in ("__iter__", "__getitem__") for s in v.cls.node.body)

    def iteration(self, it):
        """(iterates a loader, truncated, element value)."""
        if isinstance(it, Iter):
            batch, trunc, elem = self.iteration(it.base)
            return (batch, True, elem) if it.kind == "trunc" else (batch, trunc, (T, elem))
        if self.loader(it):
            return True, False, (T, T)
        if it == PARAMS or isinstance(it, Zip):
            return False, False, PARAM if it == PARAMS else it.elems
        return False, False, it if is_graph(it) else None

    def toggle(self, flag) -> None:
        """A parameter's requires_grad set to ``flag`` (unknown: the grad mode of forwards is)."""
        t = self.truth(flag)
        self.frozen = None if t is None else not t

    # ------------------------------------------------------------------ stores and leaks
    def store(self, target, value, fr: Frame, accumulate: bool) -> None:
        """Bind ``target``; an accumulation of a graph into storage older than this loop
        iteration is a leak (the graph of every iteration stays referenced)."""
        root = target
        while isinstance(root, (ast.Attribute, ast.Subscript)):
            root = root.value
        g = graph_of(value)
        persistent = not (isinstance(root, ast.Name) and root.id in fr.fresh) or target is not root
        if g and accumulate and persistent and any(c[0] == "loop" for c in self.ctx):
            loop = self.batch_loop()
            depth = loop.depth if loop else 0
            certain = not any(c[0] == "cond" for c in self.ctx[depth:])
            caught = any(c[0] == "try" and c[1] for c in self.ctx)
            self.leaks.append((g, loop, caught, certain))
        if isinstance(target, ast.Name):
            scope = self.globals[fr.path] if target.id in fr.globals_ else fr.env
            scope[target.id] = join(scope.get(target.id), value) if accumulate and \
                target is not root else (value if not (accumulate and g) else g)
            if not accumulate:
                fr.fresh.add(target.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            vals = value if isinstance(value, tuple) and len(value) == len(target.elts) else \
                [graph_of(value)] * len(target.elts)
            for t, v in zip(target.elts, vals, strict=False):
                self.store(t, v, fr, accumulate)
        elif isinstance(target, ast.Attribute):
            obj = self.eval(target.value, fr)
            if obj == PARAM and target.attr == "requires_grad":
                self.toggle(value)
            elif isinstance(obj, Obj):
                obj.attrs[target.attr] = join(obj.attrs.get(target.attr), value) if accumulate else value
        elif isinstance(target, ast.Subscript) and isinstance(root, ast.Name) and g:
            fr.env[root.id] = join(self.lookup(root.id, fr), g)
        elif isinstance(target, ast.Starred):
            self.store(target.value, None, fr, accumulate)

    # ------------------------------------------------------------------ statements
    def block(self, stmts, fr: Frame) -> str | None:
        pushed = 0  # ``if test: continue``: the rest of the block runs only when test is false
        try:
            for s in stmts:
                r = self.stmt(s, fr)
                if r:
                    return r
                if self._skip is not None:
                    self.ctx.append(("cond", self._skip))
                    self._skip, pushed = None, pushed + 1
            return None
        finally:
            self._skip = None
            if pushed:
                del self.ctx[-pushed:]

    def _once(self, node: ast.expr, fr: Frame, record: bool = False) -> None:
        """A result (returned, or a record's value) read after its batch loop: one batch's loss
        as the whole value is certain, through an expression a doubt."""
        if fr.once and not any(lp.batch for lp in fr.loops):
            if isinstance(node, ast.Name) and node.id in fr.once:
                self.once.append(node.lineno)
            elif not record and any(isinstance(n, ast.Name) and n.id in fr.once for n in ast.walk(node)):
                self.doubts.append(f"one batch's loss reported at line {node.lineno}")

    def stmt(self, s, fr: Frame) -> str | None:
        if isinstance(s, ast.Expr) and isinstance(s.value, ast.Yield) and self._on_yield \
                and self._on_yield[-1] is not None:
            body, self._on_yield[-1] = self._on_yield[-1], None
            body(self.eval(s.value.value, fr))  # the with-block runs here, in the generator's modes
        elif isinstance(s, ast.Expr):
            self.eval(s.value, fr)
        elif isinstance(s, ast.Assign):
            reads = [n for n in ast.walk(s.value) if isinstance(n, ast.Name)]
            lossy = any(is_graph(self.lookup(n.id, fr)) or n.id in fr.once for n in reads)
            v = self.eval(s.value, fr)
            selfref = {n.id for n in reads}
            for t in s.targets:
                acc = (isinstance(t, ast.Name) and t.id in selfref) or isinstance(t, ast.Subscript)
                self.store(t, v, fr, accumulate=acc)
                if isinstance(t, ast.Name):  # one batch's loss, overwritten each iteration
                    if lossy and not acc and self.batch_loop() is not None:
                        fr.once.add(t.id)
                    else:
                        fr.once.discard(t.id)
        elif isinstance(s, ast.AnnAssign):
            if s.value is not None:
                self.store(s.target, self.eval(s.value, fr), fr, accumulate=False)
        elif isinstance(s, ast.AugAssign):
            old, v = self.eval(s.target, fr), self.eval(s.value, fr)
            g = graph_of(old, v)
            if g:  # in place on a graph tensor keeps its graph even under no_grad
                new = old if is_graph(old) and not self.grad else self.gop(g)
            elif isinstance(old, Const) and isinstance(v, Const):
                new = fold(s.op, old.value, v.value)
            else:
                new = T if T in (old, v) else None
            self.store(s.target, new, fr, accumulate=True)
            if isinstance(s.target, ast.Name):
                fr.once.discard(s.target.id)
        elif isinstance(s, ast.Return):
            if s.value is not None:
                self._once(s.value, fr)
            fr.rets.append(self.eval(s.value, fr))
            self.stop(fr)
            return "return"
        elif isinstance(s, ast.Break):
            self.stop(fr)
            return "break"
        elif isinstance(s, ast.Continue):
            return "continue"
        elif isinstance(s, ast.Raise):
            exc = s.exc.func if isinstance(s.exc, ast.Call) else s.exc
            if isinstance(self.eval(exc, fr), Ext) and self.eval(exc, fr).name == "SystemExit":
                self.exits.append(any(c[0] == "handler" for c in self.ctx))
            return "raise"
        elif isinstance(s, ast.If):
            return self.branch(s, fr)
        elif isinstance(s, (ast.For, ast.While)):
            return self.loop(s, fr)
        elif isinstance(s, ast.With):
            return self.with_(s, s.items, fr)
        elif isinstance(s, ast.Try):
            catches = any((h.type is None or any(getattr(t, "id", getattr(t, "attr", "")) in CATCH_ALL
                                                 for t in getattr(h.type, "elts", [h.type])))
                          and not any(isinstance(n, ast.Raise) for n in ast.walk(h)) for h in s.handlers)
            self.ctx.append(("try", catches))
            r = self.block(s.body, fr)
            self.ctx.pop()
            after = self.snapshot(fr)
            for h in s.handlers:
                self.ctx.append(("handler",))
                self.block(h.body, fr)
                self.ctx.pop()
                self.restore(fr, after)
            r = r or self.block(s.orelse, fr)
            return self.block(s.finalbody, fr) or r
        elif isinstance(s, ast.FunctionDef):
            fr.env[s.name] = Fn(s, fr.path, None, None if fr.env is self.globals.get(fr.path) else fr.env)
        elif isinstance(s, ast.ClassDef):
            fr.env[s.name] = Cls(s, fr.path, tuple(self.eval(b, fr) for b in s.bases))
        elif isinstance(s, (ast.Import, ast.ImportFrom)):
            self.bind_import(s, fr.env)
        elif isinstance(s, ast.Global):
            fr.globals_.update(s.names)
        elif isinstance(s, ast.Assert):
            self.eval(s.test, fr)
        elif not isinstance(s, (ast.Pass, ast.Delete)):
            raise Unsure(f"statement {type(s).__name__}")
        return None

    def snapshot(self, fr: Frame):
        return dict(fr.env), set(fr.fresh), self.grad, self.training, self.frozen, self.lowp

    def restore(self, fr: Frame, snap) -> None:
        env, fresh, self.grad, self.training, self.frozen, self.lowp = snap
        fr.env.clear()
        fr.env.update(env)
        fr.fresh = set(fresh)

    def branch(self, s: ast.If, fr: Frame) -> str | None:
        t = self.truth(self.eval(s.test, fr))
        if t is not None:
            return self.block(s.body if t else s.orelse, fr)
        before = self.snapshot(fr)
        self.ctx.append(("cond", s.test))
        r1 = self.block(s.body, fr)
        one = self.snapshot(fr)
        self.restore(fr, before)
        r2 = self.block(s.orelse, fr)
        self.ctx.pop()
        if r1 and r2:
            return r1 if r1 == r2 else "raise"
        if {r1, r2} == {"continue", None} and fr.loops:
            self._skip = s.test if r1 else ast.UnaryOp(ast.Not(), s.test)
        if "return" in (r1, r2) and not fr.loops:
            self.doubts.append(f"a conditional return at line {s.lineno}")
        if r2:
            self.restore(fr, one)
        elif not r1:  # both fall through: merge
            env, fresh, grad, training, frozen, lowp = one
            for k in set(env) | set(fr.env):
                fr.env[k] = join(env[k], fr.env[k]) if k in env and k in fr.env else env.get(k, fr.env.get(k))
            fr.fresh |= fresh
            self.grad = self.grad if self.grad == grad else None
            self.training = self.training if self.training == training else None
            self.frozen = self.frozen if self.frozen == frozen else None  # frozen on one side only
            self.lowp = self.lowp or lowp
        return None

    def stop(self, fr: Frame) -> None:
        if fr.loops:
            loop = fr.loops[-1]
            loop.stops.append([c[1] for c in self.ctx[loop.depth:] if c[0] == "cond"])

    def loop(self, s, fr: Frame, elts=None) -> str | None:
        if isinstance(s, ast.While):
            if self.truth(self.eval(s.test, fr)) is False:
                return self.block(s.orelse, fr)
            batch, trunc, elem = False, False, None
        else:
            batch, trunc, elem = self.iteration(self.eval(s.iter, fr))
        names = {n.id for n in ast.walk(getattr(s, "target", ast.Pass())) if isinstance(n, ast.Name)}
        counters = {n.target.id for b in s.body for n in ast.walk(b)
                    if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name)}
        names |= counters
        index = set(counters)
        if isinstance(s, ast.For) and isinstance(s.iter, ast.Call) and isinstance(s.target, ast.Tuple) \
                and getattr(s.iter.func, "id", "") == "enumerate" and isinstance(s.target.elts[0], ast.Name):
            index.add(s.target.elts[0].id)
        for b in s.body:  # values that change from one iteration to the next are not constants
            for n in ast.walk(b):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) \
                        and isinstance(fr.env.get(n.id), Const):
                    fr.env[n.id] = T
        rec = Loop(batch, names, len(self.ctx), index=index)
        self.ctx.append(("loop", rec))
        fr.loops.append(rec)
        outer_fresh, fr.fresh = fr.fresh, set()
        r = None
        for _ in range(2):  # twice: what one iteration leaves behind reaches the next
            if isinstance(s, ast.For):
                self.store(s.target, elem, fr, accumulate=False)
            r = self.block(s.body, fr)
            if r in ("return", "raise", "break"):
                break
        fr.fresh |= outer_fresh
        fr.loops.pop()
        self.ctx.pop()
        self.loops.append(rec)
        if trunc or any(not conds or any(isinstance(n, ast.Name) and n.id in names
                                         for c in conds for n in ast.walk(c)) for conds in rec.stops):
            rec.stops.append("truncated")
        elif rec.stops and rec.batch:
            self.doubts.append(f"a loop stopped under a condition at line {s.lineno}")
        if r in ("return", "raise"):
            return r
        return self.block(s.orelse, fr)

    def comprehension(self, node, fr: Frame):
        sub = Frame(fr.path, dict(fr.env), fr.closure, set(fr.fresh), [], [], fr.globals_)
        batch = trunc = False
        for gen in node.generators:
            b, t, elem = self.iteration(self.eval(gen.iter, sub))
            batch, trunc = batch or b, trunc or t
            self.store(gen.target, elem, sub, accumulate=False)
        rec = Loop(batch, set(), len(self.ctx))
        if trunc:  # over islice(loader, n): some batches are never evaluated
            rec.stops.append("truncated")
        if batch and any(gen.ifs for gen in node.generators):  # which batches the filter keeps is data
            self.doubts.append(f"a comprehension over batches filtered at line {node.lineno}")
        self.ctx.append(("loop", rec))
        elt = (node.key, node.value) if isinstance(node, ast.DictComp) else (node.elt,)
        g = graph_of(*[self.eval(e, sub) for e in elt])
        if g:
            self.leaks.append((g, rec if batch else None, any(c[0] == "try" and c[1] for c in self.ctx),
                               not any(c[0] == "cond" for c in self.ctx)))
        self.ctx.pop()
        self.loops.append(rec)
        return g

    def with_(self, s, items, fr: Frame) -> str | None:
        if not items:
            return self.block(s.body, fr)
        item = items[0]
        gen = self.generator_context(item.context_expr, fr)
        if gen is not None:
            out: list = []

            def body(value) -> None:
                if item.optional_vars is not None:
                    self.store(item.optional_vars, value, fr, accumulate=False)
                out.append(self.with_(s, items[1:], fr))

            entry = self.frozen
            self.invoke(*gen, on_yield=body)
            if self.frozen is None:  # flags it saved and put back: what it found on entry
                self.frozen = entry
            if not out:
                raise Unsure("a context manager that does not yield")
            return out[0]
        before, cv = self.grad, self.eval(item.context_expr, fr)
        if isinstance(cv, (Obj, Fn)) or (cv is None and isinstance(item.context_expr, ast.IfExp)):
            raise Unsure("a context manager defined in the workspace or chosen at run time")
        if item.optional_vars is not None:
            self.store(item.optional_vars, None, fr, accumulate=False)
        if isinstance(cv, Ctx) and cv.grad is not None:
            self.grad = cv.grad
        auto = isinstance(cv, Ctx) and cv.autocast
        self.autocast += auto
        r = self.with_(s, items[1:], fr)
        self.autocast -= auto
        if isinstance(cv, Ctx) and (cv.grad is not None or not cv.autocast):
            self.grad = before
        return r

    # ------------------------------------------------------------------ calls into the workspace
    def generator_context(self, expr, fr: Frame):
        """``(fn, args, kw)`` when ``expr`` calls a workspace ``@contextmanager`` generator whose one
        ``yield`` runs exactly once (nested in with / try blocks only), else None."""
        if not isinstance(expr, ast.Call):
            return None
        fn = self.eval(expr.func, fr)
        if not isinstance(fn, Fn) or not any(_is_contextmanager(self.eval(d, Frame(fn.path, {})))
                                             for d in fn.node.decorator_list):
            return None
        yields = [n for n in ast.walk(fn.node) if isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await))]
        if len(yields) != 1 or not _once_in(fn.node.body, yields[0]):
            raise Unsure(f"context manager {fn.node.name}: its yield may not run exactly once")
        args = [self.eval(a, fr) for a in expr.args]
        return fn, args, {k.arg: self.eval(k.value, fr) for k in expr.keywords}

    def invoke(self, fn: Fn, args, kw, on_yield=None):
        """Run a workspace function; ``on_yield``: a @contextmanager generator, whose with-block
        ``on_yield`` runs at its yield."""
        node = fn.node
        if node in self.stack or len(self.stack) > 24:
            raise Unsure("recursion")
        if _suspends(node) and on_yield is None:
            raise Unsure(f"generator {node.name}")
        mode = "keep"
        for d in node.decorator_list:
            callee = self.eval(d.func if isinstance(d, ast.Call) else d, Frame(fn.path, {}))
            name = getattr(callee, "name", "")
            if name.startswith("torch") and name.rsplit(".", 1)[-1] in (
                    "no_grad", "enable_grad", "inference_mode", "set_grad_enabled"):
                arg = self.eval(d.args[0], Frame(fn.path, {})) if getattr(d, "args", None) else Const(True)
                m = grad_call_mode(name, arg)
                mode = mode if m is None else m
                if m == "?":
                    raise Unsure("set_grad_enabled decorator with an unknown mode")
            elif name not in ("property", "staticmethod") and not (on_yield and _is_contextmanager(callee)):
                raise Unsure(f"decorator {ast.unparse(d)}")
        vals = ([fn.self_] if fn.self_ is not None and not any(
            getattr(d, "id", "") == "staticmethod" for d in node.decorator_list) else []) + list(args)
        env = bind(node, vals, kw, lambda d: self.eval(d, Frame(fn.path, {})), missing=Const(None))
        fr = Frame(fn.path, env, fn.closure)
        self.stack.append(node)
        self._on_yield.append(on_yield)
        saved = self.grad
        if mode != "keep":
            self.grad = mode
        try:
            self.block(node.body, fr)
        finally:
            self._on_yield.pop()
        if mode != "keep":
            self.grad = saved
        self.stack.pop()
        return reduce(join, fr.rets) if fr.rets else Const(None)

    def instantiate(self, cls: Cls, args, kw):
        module = self.is_module(cls)
        obj = Obj(cls, module=module)
        fields = [s for s in cls.node.body if isinstance(s, ast.AnnAssign) and hasattr(s.target, "id")]
        obj.attrs = {s.target.id: self.eval(s.value, Frame(cls.path, {})) for s in fields if s.value}
        fields = [s.target.id for s in fields]
        init, path = self.member(cls, "__init__")
        if init is None:
            obj.attrs.update(dict(zip(fields, args, strict=False)), **kw)
        else:
            self.invoke(Fn(init, path, obj), args, kw)
        post, path = self.member(cls, "__post_init__")
        if post is not None:
            self.invoke(Fn(post, path, obj), [], {})
        if module:
            obj.attrs = {k: SUB if v == CRIT else v for k, v in obj.attrs.items()}
        return obj

    def is_module(self, cls: Cls) -> bool:
        return any((isinstance(b, Ext) and b.name.startswith("torch.nn.")) or
                   (isinstance(b, Cls) and self.is_module(b)) for b in cls.bases)

    # ------------------------------------------------------------------ the driver
    def run(self, train: tuple[str, str], config: tuple[str, str], knobs: dict[str, object]) -> None:
        """``train`` (module, function) called with ``config`` (module, class) built from ``knobs``,
        as the check's driver does."""
        paths = {m: p for m, p in self.mods.items()}
        if config[0] not in paths or train[0] not in paths:
            raise Unsure(f"no {config[0]} / {train[0]} module")
        cfg_cls = self.module(paths[config[0]]).get(config[1])
        fit = self.module(paths[train[0]]).get(train[1])
        if not isinstance(cfg_cls, Cls) or not isinstance(fit, Fn):
            raise Unsure(f"no {config[1]} class or {train[1]} function")
        cfg = self.instantiate(cfg_cls, [], {k: Const(v) for k, v in knobs.items()})
        result = self.invoke(fit, [cfg], {})
        if graph_of(result):
            self.doubts.append(f"{train[1]}() returns graph-carrying values")
