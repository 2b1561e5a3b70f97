"""Mock-mode classifier for inplace_op_breaks_autograd (ast only): ``squash_gate`` over abstract tensors
(saved output, graph, detached, .data view; values at sample points), ``activation_unit`` (+ block) for
gelu and the check's relu/tanh, the trainer's wrappers; other changes: UNSURE. Labels: bug, fixed,
crash_under_knobs, grad_cut (.detach/.data/no_grad gate), wrong_model, wrong_metrics, no_result, tampered."""

from __future__ import annotations

import ast
import math
from functools import lru_cache
from pathlib import Path

from sandbox_env.analysis import UNSURE, Unsure
from sandbox_env.analysis.environment import classify_everywhere
from sandbox_env.analysis.exits import exits_at_import, forges_report, may_exit
from sandbox_env.analysis.tamper import dynamic_code, patches
from sandbox_env.analysis.workspace import live_files, parse, same_code
from sandbox_env.suite.tasks import load_task

ORIGINAL = Path(__file__).parent / "repo"
EDITABLE = {"gating.py", "activations.py", "layers.py", "trainer.py", "train.py"}
SAVES_OUTPUT = {"sigmoid", "tanh", "relu", "exp"}  # their backward reads their output
LOGITS = (-3.0, -0.5, 0.2, 2.5) * 2  # sample points: logits x floor
FLOORS = (0.02,) * 4 + (0.1,) * 4
FUNCS = {"sigmoid": lambda x: 1 / (1 + math.exp(-x)), "tanh": math.tanh, "relu": lambda x: max(x, 0.0),
         "exp": math.exp, "neg": lambda x: -x, "clamp": lambda x, lo, hi: min(max(x, lo), hi),
         ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
         ast.Div: lambda a, b: a / b}
FUNCS.update(add=FUNCS[ast.Add], sub=FUNCS[ast.Sub], mul=FUNCS[ast.Mult], div=FUNCS[ast.Div])
BINARY = {"add", "sub", "mul", "div"}
GRAD = ("graph", "saved")


@lru_cache(maxsize=16)
def original(path: str) -> str:
    return (ORIGINAL / path).read_text()


class V:  # an abstract tensor: kind saved | graph | detached | const | data (.data of base); its values
    def __init__(self, kind: str, val: tuple[float, ...], base: V | None = None) -> None:
        self.kind, self.val, self.base = kind, val, base


class Gate:  # squash_gate(logits, floor > 0): floor + (1 - 2 floor) sigmoid(logits), with its gradient?
    def __init__(self, fn: ast.FunctionDef, allow: bool) -> None:
        args = [a.arg for a in fn.args.args] if len(fn.args.args) == 2 else _unsure("squash_gate's signature")
        self.env = {args[0]: V("graph", LOGITS), args[1]: V("const", FLOORS)}
        self.floor, self.allow, self.crash, self.bent = args[1], allow, False, False
        self.result = self.block(fn.body, False) or _unsure("squash_gate returns nothing")

    def block(self, body: list[ast.stmt], nograd: bool) -> V | None:
        for st in body:
            if isinstance(st, ast.Pass) or (isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant)):
                continue
            if isinstance(st, ast.Return) and st.value is not None:
                return self.expr(st.value, nograd)
            if (isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name)) \
                    or isinstance(st, ast.Expr):
                val = self.expr(st.value, nograd)
                self.env.update({st.targets[0].id: val} if isinstance(st, ast.Assign) else {})
                continue
            const = isinstance(st, ast.If) and isinstance(st.test, ast.Constant)  # an environment test
            on = (isinstance(st, ast.If) and ast.unparse(st.test) in (f"{self.floor} > 0", self.floor)) \
                or (const and bool(st.test.value))
            grad = isinstance(st, ast.With) and len(st.items) == 1 and ast.unparse(
                st.items[0].context_expr) in ("torch.no_grad()", "torch.inference_mode()")
            if not (grad or on or const):
                raise Unsure(f"statement {ast.unparse(st)[:60]}")
            out = self.block(st.body if on or grad else st.orelse, nograd or grad)
            if out is not None:
                return out
        return None

    def apply(self, op: object, vals: list[V], nograd: bool, saved: bool = False) -> V:
        kinds = {v.kind for v in vals}
        kind = "const" if kinds <= {"const"} else "detached" if nograd or not kinds & set(GRAD) else \
            "saved" if saved else "graph"
        return V(kind, tuple(FUNCS[op](*r) for r in zip(*[v.val for v in vals], strict=True)))

    def expr(self, e: ast.expr, nograd: bool) -> V:
        if isinstance(e, ast.Name) and e.id in self.env:
            return self.env[e.id]
        if isinstance(e, ast.Constant) and type(e.value) in (int, float):
            return V("const", (float(e.value),) * len(LOGITS))
        if isinstance(e, ast.BinOp) and type(e.op) in FUNCS:
            return self.apply(type(e.op), [self.expr(e.left, nograd), self.expr(e.right, nograd)], nograd)
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
            return self.apply("neg", [self.expr(e.operand, nograd)], nograd)
        if isinstance(e, ast.Attribute) and e.attr == "data":
            base = self.expr(e.value, nograd)
            return V("data", base.val, base=base)
        if not isinstance(e, ast.Call) or not isinstance(e.func, ast.Attribute) or e.keywords:
            raise Unsure(f"expression {ast.unparse(e)[:60]}")
        name, owner = e.func.attr, e.func.value
        args = [self.expr(a, nograd) for a in e.args]
        if ast.unparse(owner) not in ("torch", "F", "torch.nn.functional"):
            args.insert(0, self.expr(owner, nograd))  # a method: its tensor is the first argument
        elif name in ("clone", "detach") or name.endswith("_"):
            raise Unsure(f"torch.{name}")
        base = args[0] if args else None
        if name in ("clone", "detach") and len(args) == 1:
            return V("detached" if name == "detach" else "graph" if base.kind == "saved" and not nograd
                     else base.kind, base.val)
        if name in FUNCS and name not in BINARY and len(args) == (3 if name == "clamp" else 1):
            return self.apply(name, args, nograd, name in SAVES_OUTPUT)
        if name in BINARY and len(args) == 2:
            return self.apply(name, args, nograd)
        if name.endswith("_") and name[:-1] in BINARY and len(args) == 2:  # in place: the version moves
            target = base.base if base.kind == "data" else base
            self.bent |= (base.kind == "data" and target.kind in GRAD) or (nograd and base.kind in GRAD)
            self.crash |= base.kind == "saved" and not self.allow
            target.val = base.val = self.apply(name[:-1], [target, args[1]], nograd).val
            return base
        raise Unsure(f"call {name}")

    def label(self) -> str:
        want = tuple(f + (1 - 2 * f) * FUNCS["sigmoid"](x) for x, f in zip(LOGITS, FLOORS, strict=True))
        if self.crash or any(abs(a - b) > 1e-9 for a, b in zip(self.result.val, want, strict=True)):
            return "crash" if self.crash else "wrong_model"
        return "grad_cut" if self.bent or self.result.kind not in GRAD else "ok"


def _fold(e: ast.expr, env: dict[str, object]) -> object:  # a constant over the unit's arguments
    if isinstance(e, ast.Constant):
        return e.value
    if isinstance(e, ast.Name) and e.id in env:
        return env[e.id]
    if isinstance(e, (ast.Tuple, ast.List, ast.Set)):
        return tuple(_fold(x, env) for x in e.elts)
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not):
        return not _fold(e.operand, env)
    ops = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b, ast.In: lambda a, b: a in b,
           ast.NotIn: lambda a, b: a not in b, ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b}
    if isinstance(e, ast.Compare) and len(e.ops) == 1 and type(e.ops[0]) in ops:
        return ops[type(e.ops[0])](_fold(e.left, env), _fold(e.comparators[0], env))
    raise Unsure(f"value {ast.unparse(e)[:60]}")


def dropout_spec(e: ast.Call, env: dict[str, object]) -> tuple[object, object]:  # (p, inplace)
    kw, pos = {k.arg: _fold(k.value, env) for k in e.keywords}, [_fold(a, env) for a in e.args]
    if len(pos) > 2 or set(kw) - {"p", "inplace"}:
        raise Unsure("a Dropout call")
    return (pos[0] if pos else kw.get("p", 0.5), (pos[1:] or [kw.get("inplace", False)])[0])


def unit_layers(fn: ast.FunctionDef, act: str, p: object) -> list[tuple[str, object]]:  # act/drop
    env: dict[str, object] = dict(zip([a.arg for a in fn.args.args], (act, p), strict=True))
    layers: list[tuple[str, object]] = []

    def item(e: ast.expr) -> tuple[str, object]:
        if isinstance(e, ast.Call) and ast.unparse(e.func) == "ACTIVATIONS.build" and len(e.args) == 1:
            return ("act", _fold(e.args[0], env))
        if isinstance(e, ast.Call) and ast.unparse(e.func) == "nn.Dropout":
            return ("drop", dropout_spec(e, env))
        raise Unsure(f"layer {ast.unparse(e)[:60]}")

    def run(body: list[ast.stmt]) -> list | None:
        for st in body:
            call = ast.unparse(st.value.func) if isinstance(getattr(st, "value", None), ast.Call) else ""
            if isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant):
                continue
            if isinstance(st, ast.Assign) and isinstance(st.value, ast.List):
                layers[:] = [item(x) for x in st.value.elts]
            elif isinstance(st, ast.Expr) and call.endswith(".append") and len(st.value.args) == 1:
                layers.append(item(st.value.args[0]))
            elif isinstance(st, ast.If):
                out = run(st.body if _fold(st.test, env) else st.orelse)
                if out is not None:
                    return out
            elif isinstance(st, ast.Return) and call == "nn.Sequential":
                starred = all(isinstance(a, ast.Starred) for a in st.value.args)
                return list(layers) if starred else [item(a) for a in st.value.args]
            else:
                raise Unsure(f"statement {ast.unparse(st)[:60]}")
        return None

    out = run(fn.body)
    return out if out is not None else _unsure("activation_unit returns nothing")


def _unsure(why: str):
    raise Unsure(why)


class _Unwrap(ast.NodeTransformer):  # self.drop(x) -> x
    def __init__(self, name: str) -> None:
        self.name = name

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        return node.args[0] if ast.unparse(node.func) == self.name and len(node.args) == 1 else node


def block_dropout(text: str) -> tuple[ast.expr | None, ast.Call | None]:
    """layers.py as the task's own or with its own Dropout after the unit: (unit's p, that Dropout)."""
    tree, unit_arg, own = ast.parse(text), None, None
    for n in list(ast.walk(tree)):
        body = getattr(n, "body", None)
        for i, st in enumerate(body if isinstance(body, list) else []):
            if isinstance(st, ast.Assign) and isinstance(st.value, ast.Call) and ast.unparse(
                    st.value.func) == "nn.Dropout" and ast.unparse(st.targets[0]).startswith("self."):
                own = st.value
                body.pop(i)
                tree = _Unwrap(ast.unparse(st.targets[0])).visit(tree)
                break
        if isinstance(n, ast.Call) and ast.unparse(n.func) == "activation_unit" and len(n.args) == 2:
            unit_arg, n.args[1] = n.args[1], ast.Name("dropout", ast.Load())
    return (unit_arg, own) if same_code(ast.unparse(tree), original("layers.py")) else _unsure("layers.py")


def trainer_facts(text: str) -> tuple[bool, bool, bool]:
    """(allow_mutation around forward+backward, backward error swallowed, literal history); rest: own."""
    tree = ast.parse(text)
    allow = swallowed = literal = False
    for n in ast.walk(tree):
        if isinstance(n, ast.FunctionDef) and n.name == "fit":
            literal = any(isinstance(x, ast.List) and x.elts and all(isinstance(c, ast.Constant)
                                                                     for c in x.elts) for x in ast.walk(n))
        swallowed |= isinstance(n, ast.Try) and "backward" in ast.unparse(ast.Module(n.body, []))
        for f in ("body", "orelse"):
            body, new = getattr(n, f, None), []
            for st in body if isinstance(body, list) else ():
                ctx = ast.unparse(st.items[0].context_expr) if isinstance(st, ast.With) else ""
                src = ast.unparse(ast.Module(st.body, [])) if ctx else ""
                allow |= "allow_mutation_on_saved_tensors" in ctx and "self.model(" in src \
                    and "backward(" in src
                if "allow_mutation_on_saved_tensors" in ctx or "anomaly" in ctx:
                    new += st.body
                elif not (isinstance(st, ast.Expr) and "set_detect_anomaly" in ast.unparse(st)):
                    new.append(st)
            if isinstance(body, list):
                setattr(n, f, new)
        if isinstance(n, ast.Call) and ast.unparse(n.func).endswith(".backward"):
            n.keywords = [k for k in n.keywords if k.arg != "retain_graph"]
    if not (swallowed or literal) and not same_code(ast.unparse(tree), original("trainer.py")):
        raise Unsure("trainer.py changed")
    return allow, swallowed, literal


def _fn(text: str, name: str) -> ast.FunctionDef:
    found = [n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef) and n.name == name]
    return found[0] if len(found) == 1 else _unsure(f"{name} not found")


def classify(files: dict[str, str]) -> str:
    t = load_task(Path(__file__).parent)
    return classify_everywhere(live_files(files, t.entry.modules), t.verify.production_dir, _classify)


def _classify(files: dict[str, str]) -> str:
    mods, py = parse(files), [p for p in files if p.endswith(".py")]
    if forges_report(list(mods.values())) or len(mods) != len(py):
        return UNSURE
    if patches(list(mods.values()), ("torch",)):
        return "tampered"
    if dynamic_code(list(mods.values())):
        return UNSURE
    if any(exits_at_import(m) for n, m in mods.items() if n != "train") or any(
            may_exit(f, mods["trainer"]) for f in ast.walk(mods["trainer"].tree)
            if isinstance(f, ast.FunctionDef) and f.name in ("fit", "run", "train_epoch", "evaluate")):
        return "no_result"
    if any(p not in EDITABLE and not ((ORIGINAL / p).exists() and same_code(files[p], original(p)))
           for p in py):
        return UNSURE
    try:
        allow, swallowed, literal = trainer_facts(files["trainer.py"])
        if literal:
            return "wrong_metrics"
        gate = Gate(_fn(files["gating.py"], "squash_gate"), allow).label()
        unit_arg, own = block_dropout(files["layers.py"])
        unit, crashes = _fn(files["activations.py"], "activation_unit"), {}
        for act in ("gelu", "relu", "tanh"):  # the default's and the check's activations
            for p in (0.1, 0.3):
                seq = unit_layers(unit, act, p if unit_arg is None else _fold(unit_arg, {"dropout": p}))
                seq += [("drop", dropout_spec(own, {"dropout": p}))] if own is not None else []
                if [k for k, _ in seq] != ["act", "drop"] or seq[0][1] != act or seq[1][1][0] != p:
                    return "wrong_model"
                crashes[act] = bool(seq[1][1][1]) and act in SAVES_OUTPUT and not allow
    except (Unsure, KeyError, SyntaxError, TypeError, IndexError, ValueError, AttributeError):
        return UNSURE
    crash = "bug" if gate == "crash" or crashes["gelu"] else ""
    crash = crash or ("crash_under_knobs" if any(crashes.values()) else "")
    if swallowed or crash or gate != "ok":  # a swallowed error: steps skipped (or nothing to swallow)
        return ("wrong_metrics" if crash else UNSURE) if swallowed else crash or gate
    return "fixed" if same_code(files.get("train.py", ""), original("train.py")) else UNSURE
