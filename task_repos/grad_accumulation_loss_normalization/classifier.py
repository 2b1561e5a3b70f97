"""Mock classifier for grad_accumulation_loss_normalization (ast only): follows ``fit(cfg)`` as the
check runs it (config and environment tests folded per knob draw and environment); in the one
function calling ``.backward()`` it evaluates the loss over an algebra of counts (token mean/sum of a
micro-batch; the window's labelled tokens, input tokens, positions, sessions, micro-batches) and
reads how the epoch's last, shorter window is stepped. Labels: no_result, no_accumulation, bug,
wrong_normalization, partial_window, fixed; anything it does not follow -> UNSURE."""

from __future__ import annotations

import ast
from pathlib import Path

from sandbox_env.analysis import UNSURE, unsure_if_not_followed
from sandbox_env.analysis.config import choices, defaults, judge, special_cased, split_entry, taken
from sandbox_env.analysis.environment import classify_everywhere
from sandbox_env.analysis.exits import exits_at_import, forges_report
from sandbox_env.analysis.tamper import dynamic_code, patches
from sandbox_env.analysis.workspace import identifiers, live_files, method_call, parse, same_code
from sandbox_env.suite.tasks import load_task

TASK = load_task(Path(__file__).parent)
ORIGINAL = TASK.root / "repo"
KEPT = ("corpus.py", "models.py", "optim.py", "evaluation.py")  # decide the numbers; a fix leaves them
SIZES = {"micro_batch_size", "accum_steps"}
COUNTS = {"micro_tokens": "window_tokens", "micro_seqs": "window_seqs", "micro_inputs": "window_inputs",
          "micro_positions": "window_positions"}
DIV = {("mean", "micro_batches"): "bug", ("mean", "const"): "bug", ("sum", "micro_tokens"): "bug",
       ("sum", "window_tokens"): "ok", ("micro_tokens", "window_tokens"): "token_share",
       ("seq_sum", "window_seqs"): "wrong_normalization", ("sum", "window_inputs"): "wrong_normalization",
       ("pad_sum", "window_positions"): "wrong_normalization"}

def classify(files: dict[str, str]) -> str:
    return classify_everywhere(live_files(files, TASK.entry.modules), TASK.verify.production_dir, _classify)

def _classify(files: dict[str, str]) -> str:
    mods = parse(files)
    ms = list(mods.values())
    if any(exits_at_import(m) for m in ms):
        return "no_result"
    if forges_report(ms) or dynamic_code(ms) or any(p.value != "constant" for p in patches(ms, ("torch",))):
        return UNSURE
    fallback = defaults(mods, TASK.entry.config)
    options = choices(TASK.verify.knobs, fallback)
    kept = all(p in files and same_code(files[p], (ORIGINAL / p).read_text()) for p in KEPT)
    out = judge(options, special_cased(ms, set(options)), lambda knobs: label(mods, knobs), fallback)
    return UNSURE if out == "fixed" and not kept else out

@unsure_if_not_followed  # code the analysis does not follow: never a guess
def label(mods, knobs: dict) -> str:
    entry, name = split_entry(TASK.entry.train)
    fns = {f.name: taken(f, knobs) for m in sorted(mods, key=lambda m: m == entry)
           for f in mods[m].of(ast.FunctionDef)}  # the entry module's own functions win a clash (fit)
    for n in ast.walk(fns[name]):  # fit() must train the config's micro-batches
        targets = [getattr(t, "attr", "") for t in getattr(n, "targets", [])]
        sizes = {getattr(n, "arg", None), getattr(n, "attr", ""), *targets}
        if (sizes & SIZES and not isinstance(n, ast.Attribute)) or "effective_batch_size" in sizes:
            return "no_accumulation"
    steppers = [f for f in fns.values() if any(method_call(n, "backward") for n in ast.walk(f))]
    if len(steppers) != 1:
        return UNSURE
    fn = steppers[0]
    norm = Algebra(fn, fns).eval(next(n for n in ast.walk(fn) if method_call(n, "backward")).func.value)
    if norm == "sum":  # sum-reduced: the gradients must be divided before the step
        norm = "ok" if _rescaled(fn, fns) else UNSURE
    if norm != "ok":
        return norm if norm in ("bug", "wrong_normalization") else UNSURE
    return "fixed" if (tail := _tail(fn, fns)) == "ok" else tail

class Algebra:
    """What an expression of the step function stands for."""
    def __init__(self, fn: ast.FunctionDef, fns: dict) -> None:
        self.fns, self.env, self.bound = fns, {}, {}
        for n in ast.walk(fn):
            targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(
                n, (ast.AugAssign, ast.NamedExpr, ast.For, ast.comprehension)) else []
            for t in targets:
                for i, el in enumerate(t.elts if isinstance(t, ast.Tuple) else [t]):
                    if isinstance(el, ast.Name):
                        self.bound.setdefault(el.id, []).append((n, i if isinstance(t, ast.Tuple) else None))
    def name(self, name: str) -> str:
        if name in self.env:
            return self.env[name]
        binds = self.bound.get(name, [])
        again = [b for b in binds if isinstance(b[0], ast.Assign) and name in identifiers(b[0].value)]
        if not again or len(binds) != len(again) + 1:
            return self.kinds(binds)
        self.env[name] = self.kinds([b for b in binds if b not in again])  # x = ...; x = x / n: in order
        for node, _ in again:
            self.env[name] = self.eval(node.value)
        return self.env.pop(name)
    def kinds(self, binds: list) -> str:
        kinds = set()
        for node, i in binds:
            if isinstance(node, (ast.For, ast.comprehension)):
                zipped = isinstance(node.iter, ast.Call) and getattr(node.iter.func, "id", "") == "zip"
                zipped = zipped and i is not None
                kinds.add(self.per_micro(self.value(node.iter.args[i])) if zipped else "micro")
                continue
            value = node.value.elts[i] if isinstance(node.value, ast.Tuple) and i is not None else node.value
            kind = self.eval(value)  # a micro-batch's count added up over the loop is the window's
            kinds.add("window_tokens" if isinstance(node, ast.AugAssign) and kind == "micro_tokens" else kind)
        kinds.discard("zero")
        return kinds.pop() if len(kinds) == 1 else UNSURE
    def value(self, node: ast.AST) -> ast.AST:
        b = self.bound.get(getattr(node, "id", None), [])
        return b[0][0].value if len(b) == 1 and isinstance(b[0][0], ast.Assign) else node
    def per_micro(self, node: ast.AST) -> str:
        comp = isinstance(node, (ast.ListComp, ast.GeneratorExp))
        return "micro_tokens" if comp and COUNTS.get(self.eval(node.elt)) == "window_tokens" else UNSURE
    def eval(self, e: ast.AST) -> str:  # one case per construct; too deep -> RecursionError -> UNSURE
        if isinstance(e, ast.Constant):
            return "zero" if e.value == 0 else "const"
        if isinstance(e, ast.Name):
            return self.name(e.id)
        if isinstance(e, ast.Attribute):
            return {"accum_steps": "micro_batches", "num_label_tokens": "micro_tokens"}.get(e.attr, UNSURE)
        listed = isinstance(e, ast.Call) and getattr(e.func, "id", "") == "list" and e.args
        if (isinstance(e, ast.Subscript) and isinstance(e.slice, ast.Slice)) or (
                listed and "islice" in ast.unparse(e.args[0])):
            return "window"
        if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Div, ast.Mult, ast.Add)):
            a, b = self.eval(e.left), self.eval(e.right)
            if isinstance(e.op, ast.Add):
                return a if a == b else UNSURE
            if isinstance(e.op, ast.Mult):
                return "ok" if {a, b} == {"mean", "token_share"} else (a if b == "const" else UNSURE)
            return "per_seq" if a == "seq_parts" else DIV.get((a, b), UNSURE)  # a session's sum / its length
        if not isinstance(e, ast.Call):
            return UNSURE
        f = e.func
        fname = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
        if fname in ("int", "float") and e.args:
            return self.eval(e.args[0])
        if fname in ("item", "float", "long") and isinstance(f, ast.Attribute):
            return self.eval(f.value)
        if fname == "len" and e.args:
            return {"micro": "micro_seqs", "window": "micro_batches"}.get(self.eval(e.args[0]), UNSURE)
        if isinstance(f, ast.Name) and fname == "sum" and e.args:
            arg = e.args[0]
            if isinstance(arg, (ast.GeneratorExp, ast.ListComp)):
                return COUNTS.get(self.eval(arg.elt), UNSURE)
            return "window_tokens" if self.per_micro(self.value(arg)) == "micro_tokens" else UNSURE
        if fname == "numel":
            return "micro_positions"
        if fname == "sum" and isinstance(f, ast.Attribute):
            return self.reduce(f.value, e)
        if fname in ("cross_entropy", "token_cross_entropy", "loss_fn"):
            return self.loss(e, fname)
        return UNSURE
    def reduce(self, base: ast.AST, call: ast.Call) -> str:
        """``x.sum()``, ``x.sum(1)``, ``torch.stack([...]).sum()``."""
        if method_call(base, "stack") and base.args:
            return self.eval(ast.Call(ast.Name("sum"), [base.args[0]], []))
        labelled = {"labels", "IGNORE_INDEX"} <= identifiers(base)
        if labelled and (isinstance(base, ast.Compare) or method_call(base, "ne")):
            return "micro_tokens"
        if isinstance(base, ast.Attribute) and base.attr == "attention_mask":
            return "micro_inputs"
        kind = self.eval(base)
        if call.args or call.keywords:
            return "seq_parts" if kind == "per_token" else UNSURE
        return {"per_token": "sum", "per_seq": "seq_sum"}.get(kind, UNSURE)
    def loss(self, call: ast.Call, fname: str) -> str:
        kw = {k.arg: k.value for k in call.keywords}
        helper = self.fns.get("token_cross_entropy")
        if "num_items_in_batch" in kw:  # the helper must divide its sum by that count
            divides = helper is not None and any(
                isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div) and getattr(n.right, "id", "") ==
                "num_items_in_batch" and "sum" in ast.unparse(n.left) for n in ast.walk(helper))
            return "ok" if divides and self.eval(kw["num_items_in_batch"]) == "window_tokens" else UNSURE
        red = kw.get("reduction")
        red = red.value if isinstance(red, ast.Constant) else "mean" if red is None else None
        target = call.args[1] if len(call.args) > 1 else ast.Constant(0)
        if any("masked_fill" in ast.unparse(self.value(ast.Name(n))) for n in identifiers(target)):
            return "pad_sum" if red == "sum" else UNSURE  # padding given a target: counted in the loss
        if fname != "cross_entropy":  # the helper must pass its reduction on (or have none)
            params = [a.arg for a in helper.args.args] if helper is not None else []
            passes = helper is not None and ("reduction" not in params or any(
                k.arg == "reduction" and getattr(k.value, "id", "") == "reduction" for k in ast.walk(helper)
                if isinstance(k, ast.keyword)))
            if not passes:
                return UNSURE
        return {"mean": "mean", "sum": "sum", "none": "per_token"}.get(red, UNSURE)

def _rescaled(fn, fns) -> bool:
    """Sum-reduced losses whose gradients are divided by the window's labelled tokens before the step
    (in the step function, or in a method it calls with that count)."""
    for n in ast.walk(fn):
        if method_call(n, "div_") and "grad" in identifiers(n.func.value) and n.args:
            return Algebra(fn, fns).eval(n.args[0]) == "window_tokens"
    for call in (c for c in ast.walk(fn) if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)):
        callee = fns.get(call.func.attr)
        divs = [n.args[0].id for n in ast.walk(callee or ast.Pass()) if method_call(n, "div_") and
                "grad" in identifiers(n.func.value) and isinstance(n.args[0], ast.Name)]
        params = [a.arg for a in callee.args.args[1:]] if callee is not None else []
        if divs and divs[0] in params and params.index(divs[0]) < len(call.args):
            return Algebra(fn, fns).eval(call.args[params.index(divs[0])]) == "window_tokens"
    return False

def _tail(fn, fns) -> str:
    """How the epoch's last, shorter window is stepped: "ok", "partial_window", or UNSURE."""
    outer = next((n for n in ast.walk(fn) if isinstance(n, (ast.For, ast.While))), None)
    if outer is None:
        return UNSURE
    mod = [n for n in ast.walk(outer) if isinstance(n, ast.If) and any(
        isinstance(b, ast.BinOp) and isinstance(b.op, ast.Mod) for b in ast.walk(n.test))]
    after = fn.body[fn.body.index(outer) + 1:] if outer in fn.body else []
    if mod and not any(isinstance(n, ast.Call) for st in after for n in ast.walk(st)):
        return "partial_window"  # steps on `(i + 1) % accum_steps == 0` only: the rest is carried over
    it = getattr(outer, "iter", None)
    if isinstance(it, ast.Call) and getattr(it.func, "id", "") == "range" and len(it.args) == 3:
        stop = Algebra(fn, fns).value(it.args[1])
        return "partial_window" if any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod)
                                       for n in ast.walk(stop)) else "ok"
    helper = fns.get(getattr(getattr(it, "func", None), "attr", None)) or ast.Pass()
    yields = [n.value for n in ast.walk(helper) if isinstance(n, ast.Yield)]
    if len(yields) >= 2:
        return "ok"  # a generator of windows that also yields the last, shorter group
    grouped = [n for n in ast.walk(helper) if method_call(n, "append")]
    if len(yields) == 1 and any(getattr(n.func.value, "id", 0) == getattr(yields[0], "id", 1)
                                for n in grouped):
        return "partial_window"  # groups micro-batches but yields only full groups
    if isinstance(outer, ast.While) and "islice" in ast.unparse(outer.test):
        return "ok"
    last = any(isinstance(n, ast.Continue) for n in ast.walk(outer)) and ast.unparse(outer).count("len(") >= 2
    if any(isinstance(st, ast.If) for st in after) or last:
        return "ok"  # the pending window stepped after the loop / at the last micro-batch
    return UNSURE
