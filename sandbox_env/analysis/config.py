"""What a config value resolves to in the check's run: the config class's defaults (as written in
the workspace) and the knobs each verification draws (``task.verify.knobs``: per field, the values
one draw takes). Code that special-cases a setting is judged under every draw of the fields it
tests, so a fix that only works at the check's usual setting shows up at another one."""

from __future__ import annotations

import ast
import itertools
from collections.abc import Callable

from . import UNSURE
from .environment import worst
from .folding import NO_VALUE, compare, unary
from .workspace import Module, nodes

MAX_DRAWS = 24  # more combinations than this: the caller answers UNSURE


def fields(tree: ast.Module | None, class_name: str) -> dict[str, ast.expr]:
    """``name: type = value`` defaults of the config class ``class_name``, as expressions."""
    for node in nodes(tree) if tree else ():
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            return {s.target.id: s.value for s in node.body if isinstance(s, ast.AnnAssign)
                    and isinstance(s.target, ast.Name) and s.value is not None}
    return {}


def literal_fields(tree: ast.Module | None, class_name: str) -> dict[str, object]:
    """The defaults that are literals (others are left out)."""
    out = {}
    for name, value in fields(tree, class_name).items():
        try:
            out[name] = ast.literal_eval(value)
        except ValueError:
            continue
    return out


def split_entry(spec: str) -> tuple[str, str]:
    """``"config:Config"`` -> (module, attribute)."""
    module, _, attr = spec.partition(":")
    return module, attr


def defaults(mods: dict[str, Module], entry: str) -> dict[str, object]:
    """The literal defaults (numbers, strings, booleans) of the config class ``entry``
    (``module:Class``, the task's ``entry.config``) as the workspace writes them."""
    mod, cls = split_entry(entry)
    tree = mods[mod].tree if mod in mods else None
    return {k: v for k, v in literal_fields(tree, cls).items() if isinstance(v, int | float | str | bool)}


def choices(knobs: dict[str, list], fallback: dict[str, object]) -> dict[str, list]:
    """Per field, the values a verification may draw: the task's knobs, else the value the
    classifier has always assumed (``fallback``)."""
    out = {k: [v] for k, v in fallback.items()}
    out.update({k: list(v) for k, v in knobs.items() if v})
    return out


def _field(node: ast.AST, names: set[str]) -> list[str] | None:
    """The fields a name or attribute may hold: its own name, or the fields it is a part of
    (``loader.batch_size`` may hold ``eval_batch_size``: values travel into objects)."""
    name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None
    if name is None or name == "self":
        return None
    found = [f for f in names if f == name or f.endswith("_" + name) or f.startswith(name + "_")]
    return found or None


def _leaves(node: ast.AST, names: set[str]) -> list[str | None]:
    """The fields an expression reads (None for anything else it reads: a variable, a tensor)."""
    if (f := _field(node, names)) is not None:
        return list(f)
    if isinstance(node, ast.Constant):
        return []
    if isinstance(node, (ast.Name, ast.Attribute)):
        return [None]
    if isinstance(node, ast.Call):
        return [x for a in [*node.args, *(k.value for k in node.keywords)] for x in _leaves(a, names)]
    return [x for c in ast.iter_child_nodes(node) for x in _leaves(c, names)]


def special_cased(mods: list[Module], names: set[str]) -> set[str]:
    """The fields among ``names`` that the code tests against constants (``cfg.x == 3.0``,
    ``cfg.x in (2, 4)``, ``if cfg.flag``, ``abs(cfg.x - 3) < 1e-6``, ``loader.batch_size ==
    16384`` for a field ``eval_batch_size``): the settings it may special-case. A field compared
    with data (``peak > cfg.x``) is a parameter, not a case."""
    found: set[str] = set()
    key = ("special_cased", frozenset(names))
    for mod in mods:
        mine = mod.facts.get(key)
        if mine is None:
            mine = mod.facts[key] = frozenset(_special_cased(mod, names))
        found |= mine
    return found


def _special_cased(mod: Module, names: set[str]) -> set[str]:
    """``special_cased`` of one module (memoised on it: it depends on its text alone)."""
    found: set[str] = set()
    for n in mod.of(ast.Compare, ast.If, ast.While, ast.IfExp, ast.Assert, ast.BoolOp):
        tests = [n] if isinstance(n, ast.Compare) else []
        if isinstance(n, (ast.If, ast.While, ast.IfExp, ast.Assert)):
            tests.append(n.test)
        if isinstance(n, ast.BoolOp):
            tests += n.values
        for t in tests:
            leaves = _leaves(t, names)
            if leaves and None not in leaves:
                found |= set(leaves)
    return found


def draws(options: dict[str, list], vary: set[str],
          representative: dict[str, object] | None = None) -> list[dict[str, object]] | None:
    """Every combination of the fields in ``vary``; the others take their ``representative``
    value (code that does not special-case a field behaves alike at each of its values), else
    their first choice. None if there are more than MAX_DRAWS combinations."""
    keys = sorted(k for k in vary if len(options.get(k, [])) > 1)
    if len(list(itertools.islice(itertools.product(*(options[k] for k in keys)), MAX_DRAWS + 1))) > MAX_DRAWS:
        return None
    base = {k: (representative or {}).get(k, v[0]) for k, v in options.items()}
    return [{**base, **dict(zip(keys, combo, strict=True))}
            for combo in itertools.product(*(options[k] for k in keys))]


def judge(options: dict[str, list], vary: set[str], label: Callable[[dict[str, object]], str],
          representative: dict[str, object] | None = None) -> str:
    """The check's label over its draws: the worst ``label(draw)`` over every combination of the
    special-cased fields ``vary``. When those are too many, each field alone over its values:
    a failing label found so is the check's for that draw, but a pass is not established (UNSURE)."""
    runs = draws(options, vary, representative)
    exhaustive = runs is not None
    if runs is None:
        base = draws(options, set(), representative)[0]
        runs = [{**base, k: v} for k in sorted(vary) for v in options.get(k, [])]
    labels = []
    for d in runs:
        labels.append(label(d))
        if labels[-1] not in ("fixed", UNSURE):
            return labels[-1]  # the first draw that misbehaves decides (as worst() would)
    return worst(labels) if exhaustive else UNSURE


class _Taken(ast.NodeTransformer):
    """Folds ``if`` tests and conditional expressions on knob fields and constants to the side taken."""

    def __init__(self, knobs: dict[str, object]) -> None:
        self.knobs = knobs

    def value(self, n: ast.AST) -> object:
        """The test's value under the knobs (a field by its name: ``cfg.accum_steps``), or NO_VALUE."""
        if isinstance(n, ast.Constant):
            return n.value
        if isinstance(n, ast.Attribute):
            return self.knobs.get(n.attr, NO_VALUE)
        if isinstance(n, ast.UnaryOp):
            v = self.value(n.operand)
            return NO_VALUE if v is NO_VALUE else unary(n.op, v)
        vals = [self.value(v) for v in n.values] if isinstance(n, ast.BoolOp) else \
            [self.value(v) for v in (n.left, *n.comparators)] if isinstance(n, ast.Compare) else [NO_VALUE]
        if NO_VALUE in vals:
            return NO_VALUE
        if isinstance(n, ast.BoolOp):
            return all(vals) if isinstance(n.op, ast.And) else any(vals)
        return compare(n.ops, vals)

    def visit_If(self, node: ast.If) -> ast.AST | list[ast.stmt]:
        self.generic_visit(node)
        v = self.value(node.test)
        return node if v is NO_VALUE else (node.body if v else node.orelse or [ast.Pass()])

    def visit_IfExp(self, node: ast.IfExp) -> ast.AST:
        self.generic_visit(node)
        v = self.value(node.test)
        return node if v is NO_VALUE else (node.body if v else node.orelse)


def taken(fn: ast.FunctionDef, knobs: dict[str, object]) -> ast.FunctionDef:
    """A copy of ``fn`` as it runs under one draw of ``knobs``: each ``if`` and conditional
    expression whose test folds on knob fields and constants keeps the side taken, and the
    statements after a ``return`` in a block are gone."""
    fn = _Taken(knobs).visit(ast.parse(ast.unparse(fn))).body[0]
    for n in ast.walk(fn):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(n, field, None)
            ret = next((i for i, st in enumerate(block) if isinstance(st, ast.Return)), None) \
                if isinstance(block, list) else None
            if ret is not None:
                del block[ret + 1:]
    return fn
