"""Runtime replacement of torch (or of what the check's driver watches) by the workspace: every
assignment, ``setattr`` / ``delattr`` and ``mock.patch`` that rebinds an attribute of a torch
object, and code the analyses cannot see (``exec``, ``eval``, ``importlib``, ``sys.modules``).
Each classifier decides which replacements its check's tamper guard catches."""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from .workspace import Module

DYNAMIC = {"exec", "eval", "compile", "__import__"}
# a function's behaviour lives in these: replacing one patches the function without rebinding it
FUNCTION_INTERNALS = {"__code__", "__defaults__", "__kwdefaults__", "__globals__", "__closure__",
                      "__wrapped__"}


@dataclass(frozen=True)
class Patch:
    """``base.attr`` replaced (``base``: the dotted object, e.g. ``torch.Tensor``)."""

    base: str
    attr: str
    path: str
    line: int
    value: str = ""  # "lambda" | "function" | "constant" | "setattr" | "patch" (mock.patch) | ""


def _root(node: ast.AST) -> ast.AST:
    """The name an attribute chain starts from (``getattr(torch, "nn")`` starts from torch)."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        if isinstance(node, ast.Call):
            getattr_call = isinstance(node.func, ast.Name) and node.func.id == "getattr" and node.args
            node = node.args[0] if getattr_call else node.func
        else:
            node = node.value
    return node


def _chain(node: ast.AST) -> bool:
    """An attribute chain (``torch.nn.Module``, ``getattr(torch, "Tensor")``), not a value built
    by a call (``torch.zeros(3)`` is a tensor, not torch)."""
    while isinstance(node, (ast.Attribute, ast.Call)):
        if isinstance(node, ast.Call):
            if not (isinstance(node.func, ast.Name) and node.func.id == "getattr" and node.args):
                return False
            node = node.args[0]
        else:
            node = node.value
    return isinstance(node, ast.Name)


def _torch_names(mod: Module, roots: tuple[str, ...]) -> dict[str, str]:
    """Imported names, plus names the module binds to an object under ``roots``
    (``T = torch.Tensor``): patching through them patches torch."""
    names = dict(mod.names)
    assigns = mod.of(ast.Assign)
    for _ in range(2):
        for n in assigns:
            if _chain(n.value) and isinstance(r := _root(n.value), ast.Name) \
                    and names.get(r.id, r.id).split(".")[0] in roots:
                names.update({t.id: names.get(r.id, r.id) for t in n.targets if isinstance(t, ast.Name)})
    return names


def patches(mods: list[Module], roots: tuple[str, ...] = ("torch",),
            any_base: tuple[str, ...] = ()) -> list[Patch]:
    """Every attribute of an object under ``roots`` that the workspace rebinds (and attributes
    named in ``any_base`` whatever object holds them, e.g. a model's ``forward``)."""
    out: list[Patch] = []
    for mod in mods:
        key = ("patches", roots, any_base)
        found = mod.facts.get(key)
        if found is None:
            found = mod.facts[key] = tuple(_module_patches(mod, roots, any_base))
        out += found
    return out


def _module_patches(mod: Module, roots: tuple[str, ...], any_base: tuple[str, ...]) -> list[Patch]:
    """``patches`` of one module (memoised on it: it depends on the module's text alone)."""
    out = []
    local = {n.name for n in mod.of(ast.FunctionDef, ast.AsyncFunctionDef)}
    names = _torch_names(mod, roots)
    for n in mod.of(ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete, ast.Call):
        targets: list[ast.AST] = []
        value: ast.AST | None = getattr(n, "value", None)
        if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = n.targets if isinstance(n, (ast.Assign, ast.Delete)) else [n.target]
        elif isinstance(n, ast.Call) and n.args:
            name = mod.dotted(n.func).rsplit(".", 1)[-1]
            first = n.args[0]
            if name in ("setattr", "delattr", "object", "patch_object") and len(n.args) >= 2:
                attr = str(n.args[1].value) if isinstance(n.args[1], ast.Constant) else "?"
                targets = [ast.Attribute(value=first, attr=attr)]
                value = n.args[2] if len(n.args) > 2 else None
            elif name == "patch" and isinstance(first, ast.Constant) and isinstance(first.value, str):
                base, _, attr = first.value.rpartition(".")
                if base.split(".")[0] in roots:
                    out.append(Patch(base, attr, mod.path, n.lineno, "patch"))
        kind = "lambda" if isinstance(value, ast.Lambda) else "function" if isinstance(value, ast.Name) \
            and value.id in local else "setattr" if isinstance(n, ast.Call) else "constant" \
            if isinstance(value, ast.Constant) else ""
        for t in targets:
            if isinstance(t, ast.Attribute):
                root = _root(t.value)
                full = names.get(root.id, root.id) if isinstance(root, ast.Name) else ""
                if full.split(".")[0] in roots or t.attr in any_base:
                    out.append(Patch(mod.dotted(t.value) or ast.unparse(t.value), t.attr, mod.path,
                                     getattr(t, "lineno", getattr(n, "lineno", 0)), kind))
    return out


def dynamic_code(mods: list[Module]) -> bool:
    """Code the analyses cannot read: exec / eval / compile / __import__, importlib, sys.modules."""
    return any(_memo(mod, "dynamic_code", _dynamic) for mod in mods)


def _memo(mod: Module, key: str, fact: Callable[[Module], bool]) -> bool:
    found = mod.facts.get(key)
    if found is None:
        found = mod.facts[key] = fact(mod)
    return found


def _dynamic(mod: Module) -> bool:
    if any("importlib" in name for name in mod.names.values()):
        return True
    return any((isinstance(n, ast.Call) and getattr(n.func, "id", "") in DYNAMIC) or
               (isinstance(n, ast.Attribute) and mod.dotted(n) == "sys.modules")
               for n in mod.of(ast.Call, ast.Attribute))


INTROSPECTION = {"gc.get_objects", "gc.get_referrers", "gc.get_referents", "sys._getframe",
                 "inspect.currentframe", "inspect.stack", "inspect.getouterframes"}


def reaches_driver(mods: list[Module]) -> bool:
    """Does the code reach into objects it was not given (``gc.get_objects()``, the caller's
    frames): the white-box way to edit what the check's driver measures or reports?"""
    return any(_memo(mod, "reaches_driver", _reaches) for mod in mods)


def _reaches(mod: Module) -> bool:
    return any((isinstance(n, ast.Call) and mod.dotted(n.func) in INTROSPECTION)
               or (isinstance(n, ast.Attribute) and n.attr in ("f_back", "f_locals", "f_globals"))
               for n in mod.of(ast.Call, ast.Attribute))
