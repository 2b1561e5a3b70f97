"""The workspace as the check's run sees it: which Python files run (imported, transitively,
from the task's entry modules), their parsed trees and what their imported names stand for."""

from __future__ import annotations

import ast
import sys
import weakref
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

# Modules the workspace cannot shadow: already imported (stdlib, torch, numpy) when it is.
# sitecustomize.py / usercustomize.py / *.pth are never loaded from the workspace either.
NOT_SHADOWABLE = set(sys.stdlib_module_names) | {"torch", "numpy"}


def module_paths(files: dict[str, str]) -> dict[str, str]:
    """Dotted module name -> workspace path, for every Python file."""
    mods: dict[str, str] = {}
    for path in files:
        if path.endswith(".py"):
            mods[path[:-3].replace("/", ".").removesuffix(".__init__")] = path
    return mods


def walk(node: ast.AST) -> list[ast.AST]:
    """``list(ast.walk(node))``, the same nodes in the same (breadth-first) order, built faster."""
    out = [node]
    i = 0
    base = ast.AST
    while i < len(out):
        n = out[i]
        i += 1
        for name in n._fields:
            f = getattr(n, name, None)
            if isinstance(f, base):
                out.append(f)
            elif isinstance(f, list):
                out.extend([x for x in f if isinstance(x, base)])
    return out


def _folded_false(e: ast.AST) -> bool:
    return (isinstance(e, ast.Constant) and not e.value) or (
        isinstance(e, ast.BoolOp) and isinstance(e.op, ast.And) and any(_folded_false(v) for v in e.values))


def live_nodes(node: ast.AST) -> list[ast.AST]:
    """The nodes under ``node`` without the bodies of ``if`` tests that are false constants (as
    environment.specialise leaves the code it folded): what can run."""
    out, todo = [], [node]
    while todo:
        n = todo.pop()
        out.append(n)
        kids = n.orelse if isinstance(n, ast.If) and _folded_false(n.test) else list(ast.iter_child_nodes(n))
        todo += [k for k in kids if isinstance(k, ast.AST)]
    return out


def nodes(tree: ast.AST) -> list[ast.AST] | tuple[ast.AST, ...]:
    """Every node of ``tree`` in ``ast.walk`` order: a parsed module's index when ``tree`` is one
    (computed once per text), else a fresh walk."""
    mod = owner(tree)
    return mod.nodes if mod is not None else walk(tree)


def binding_counts(tree: ast.AST) -> dict[str, int]:
    """How often each name is bound anywhere in ``tree``: assignments, arguments, imports (``import
    a.b`` binds ``a``), definitions; globals and nonlocals count twice (bound elsewhere too)."""
    stores: dict[str, int] = {}
    for n in nodes(tree):
        names: list[str] = []
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            names = [n.id]
        elif isinstance(n, ast.arg):
            names = [n.arg]
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            names = list(n.names) * 2
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            names = [a.asname or a.name.split(".")[0] for a in n.names]
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [n.name]
        for name in names:
            stores[name] = stores.get(name, 0) + 1
    return stores


def _imported_names(all_nodes: list[ast.AST] | tuple[ast.AST, ...]) -> set[str]:
    names: set[str] = set()
    for node in all_nodes:
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            f = node.func
            if (f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")) in ("import_module",
                                                                                      "__import__"):
                names.add(node.args[0].value)
    return names


def imported_names(tree: ast.AST) -> set[str]:
    """Every module a tree may import: statements, importlib.import_module / __import__ of literals."""
    return _imported_names(nodes(tree))


def live_files(files: dict[str, str], entry: list[str] | tuple[str, ...]) -> dict[str, str]:
    """The Python files that run (the entry modules and what they import), plus every
    non-Python file. A fix copied into an unused file, a planted checks/check.py or a module
    shadowing the standard library or torch does not count."""
    mods = module_paths(files)
    todo = [m for m in entry if m in mods]
    seen: set[str] = set()
    while todo:
        m = todo.pop()
        if m in seen or m.split(".")[0] in NOT_SHADOWABLE:
            continue
        seen.add(m)
        mod = module(mods[m], files[mods[m]])
        if mod is None:
            continue
        for name in mod.imports:
            parts = name.split(".")
            todo += [p for p in (".".join(parts[:i]) for i in range(1, len(parts) + 1)) if p in mods]
    keep = {mods[m] for m in seen}
    return {p: t for p, t in files.items() if not p.endswith(".py") or p in keep}


def aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> the dotted name it was imported as (``dist`` -> ``torch.distributed``)."""
    mod = owner(tree)
    return dict(mod.names) if mod is not None else _aliases(walk(tree))


def _aliases(all_nodes: list[ast.AST] | tuple[ast.AST, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for node in all_nodes:
        if isinstance(node, ast.Import):
            for a in node.names:
                top = a.name.split(".")[0]
                out[a.asname or top] = a.name if a.asname else top
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                out[a.asname or a.name] = f"{node.module}.{a.name}"
    return out


def dotted(node: ast.AST, names: dict[str, str] | None = None) -> str:
    """``dist.all_reduce`` -> ``torch.distributed.all_reduce`` through ``names`` ("" if not a name)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return ""
    parts.append((names or {}).get(node.id, node.id))
    return ".".join(reversed(parts))



def identifiers(node: ast.AST) -> set[str]:
    """Every name and attribute name ``node`` mentions (``self.labels != IGNORE`` -> self, labels, IGNORE)."""
    return {n.id if isinstance(n, ast.Name) else n.attr for n in ast.walk(node)
            if isinstance(n, ast.Name | ast.Attribute)}


def method_call(node: ast.AST, attr: str) -> bool:
    """``node`` is a call ``<anything>.<attr>(...)``."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == attr

@dataclass
class Module:
    """One parsed workspace module and what its imported names stand for. Shared between
    analyses (parsed once per text): read its tree, never change it.

    ``nodes`` is every node of the tree in ``ast.walk`` order, walked once; ``of`` filters it by
    type, and ``facts`` memoises what analyses derive from the module alone (per text, since the
    module is)."""

    path: str
    tree: ast.Module
    names: dict[str, str] = field(default_factory=dict)
    imports: set[str] = field(default_factory=set)
    nodes: tuple[ast.AST, ...] = field(default=(), compare=False, repr=False)
    facts: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)

    def dotted(self, node: ast.AST) -> str:
        return dotted(node, self.names)

    def of(self, *types: type) -> tuple[ast.AST, ...]:
        """The nodes that are instances of ``types``, in ``ast.walk`` order."""
        key = ("of", types)
        found = self.facts.get(key)
        if found is None:
            found = self.facts[key] = tuple(n for n in self.nodes if isinstance(n, types))
        return found


# a parsed module's tree -> (a weak reference to) its Module, so functions given only the tree
# find its index; both go when the module cache lets the Module go
_OWNER: weakref.WeakKeyDictionary[ast.AST, weakref.ref[Module]] = weakref.WeakKeyDictionary()


def owner(tree: ast.AST) -> Module | None:
    """The parsed workspace module whose tree ``tree`` is (None for any other tree)."""
    ref = _OWNER.get(tree)
    return ref() if ref is not None else None


@lru_cache(maxsize=512)
def module(path: str, text: str) -> Module | None:
    """The parsed module (None if it does not compile)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    all_nodes = tuple(walk(tree))
    mod = Module(path, tree, _aliases(all_nodes), _imported_names(all_nodes), all_nodes)
    _OWNER[tree] = weakref.ref(mod)
    return mod


def parse(files: dict[str, str]) -> dict[str, Module]:
    """Module name -> Module for every Python file that parses."""
    out = {}
    for name, path in module_paths(files).items():
        mod = module(path, files[path])
        if mod is not None:
            out[name] = mod
    return out


@lru_cache(maxsize=256)
def _code(text: str) -> str | None:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    for n in ast.walk(tree):
        body = getattr(n, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            n.body = body[1:]
        for part in ("body", "orelse", "finalbody"):  # `pass` is a no-op wherever it stands
            stmts = getattr(n, part, None)
            if isinstance(stmts, list) and all(isinstance(s, ast.stmt) for s in stmts):
                kept = [s for s in stmts if not isinstance(s, ast.Pass)]
                setattr(n, part, kept or ([ast.Pass()] if part == "body" else []))
    return ast.dump(tree)


def same_code(a: str, b: str) -> bool:
    """Do two sources compile to the same code (comments, layout, docstrings and `pass` aside)?"""
    code = _code(a)
    return code is not None and code == _code(b)
