"""World-size branches as the check runs them: 2 ranks through mp.spawn (so tests are true for
"more than one rank") and the torchrun variable WORLD_SIZE unset. Branches such tests decide are
pruned from the source before the other analyses read it."""

from __future__ import annotations

import ast
from functools import lru_cache

from .workspace import module, nodes

WORLD = 2


def _world_value(node: ast.AST) -> int | None:
    """The value of a world-size expression in the check's run, or None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name) and node.id == "world_size":
        return WORLD
    if isinstance(node, ast.Attribute) and node.attr == "world_size":
        return WORLD
    if isinstance(node, ast.Call) and \
            getattr(node.func, "attr", getattr(node.func, "id", "")) == "get_world_size":
        return WORLD
    if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "int" and node.args:
        env = _env_default(node.args[0])
        if env is not None:
            try:
                return int(env)
            except ValueError:
                return None
    return None


def _env_default(node: ast.AST) -> str | None:
    """``os.environ.get("WORLD_SIZE", d)`` / ``os.getenv("WORLD_SIZE", d)`` -> d (unset)."""
    if isinstance(node, ast.Call) and getattr(node.func, "attr", "") in ("get", "getenv") and node.args \
            and isinstance(node.args[0], ast.Constant) and node.args[0].value == "WORLD_SIZE":
        d = node.args[1] if len(node.args) > 1 else None
        return d.value if isinstance(d, ast.Constant) and isinstance(d.value, str) else ""
    return None


def _world_truth(test: ast.AST) -> bool | None:
    if isinstance(test, ast.BoolOp):
        vals = [_world_truth(v) for v in test.values]
        if isinstance(test.op, ast.Or):
            return True if True in vals else (False if all(v is False for v in vals) else None)
        return False if False in vals else (True if all(v is True for v in vals) else None)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        v = _world_truth(test.operand)
        return None if v is None else not v
    env = _env_default(test)
    if env is not None:
        return bool(env)
    if isinstance(test, ast.Compare) and len(test.ops) == 1 \
            and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value == "WORLD_SIZE" \
            and isinstance(test.ops[0], (ast.In, ast.NotIn)):
        return isinstance(test.ops[0], ast.NotIn)
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        a, b = _world_value(test.left), _world_value(test.comparators[0])
        if a is None or b is None or not (_mentions_world(test)):
            return None
        op = test.ops[0]
        table = {ast.Gt: a > b, ast.GtE: a >= b, ast.Lt: a < b, ast.LtE: a <= b, ast.Eq: a == b,
                 ast.NotEq: a != b}
        return table.get(type(op))
    return None


def _mentions_world(node: ast.AST) -> bool:
    return any((isinstance(n, ast.Name) and n.id == "world_size")
               or (isinstance(n, ast.Attribute) and n.attr in ("world_size", "get_world_size"))
               or (isinstance(n, ast.Constant) and n.value == "WORLD_SIZE") for n in nodes(node))


class _PruneWorld(ast.NodeTransformer):
    def visit_If(self, node: ast.If):
        self.generic_visit(node)
        v = _world_truth(node.test) if _mentions_world(node.test) else None
        if v is None:
            return node
        taken = node.body if v else node.orelse
        return taken or [ast.Pass()]

    def visit_IfExp(self, node: ast.IfExp):
        self.generic_visit(node)
        v = _world_truth(node.test) if _mentions_world(node.test) else None
        if v is None:
            return node
        return node.body if v else node.orelse


def prune_world_size(files: dict[str, str]) -> dict[str, str]:
    """``files`` with every branch a world-size test decides replaced by the branch taken."""
    out = dict(files)
    for path, text in files.items():
        if path.endswith(".py") and ("world_size" in text or "WORLD_SIZE" in text):
            out[path] = _pruned(path, text)
    return out


@lru_cache(maxsize=256)
def _pruned(path: str, text: str) -> str:
    """One file's text pruned (the same for the same text, so computed once per text)."""
    mod = module(path, text)
    if mod is not None and _mentions_world(mod.tree):  # transformed on a copy (shared tree)
        return ast.unparse(ast.fix_missing_locations(_PruneWorld().visit(ast.parse(text))))
    return text
