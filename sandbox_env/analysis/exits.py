"""Exits the check's run reaches before it can judge anything: module-level code (outside the
``__main__`` guard) that ends the process when the driver imports it, and functions that may."""

from __future__ import annotations

import ast

from .workspace import Module

EXIT_CALLS = {"sys.exit", "os._exit", "posix._exit", "exit", "quit", "os.abort"}


def _own_nodes(node: ast.AST):
    """``node`` and what it runs itself, unless an error happens (not the bodies of functions,
    lambdas or classes it defines, nor exception handlers)."""
    yield node
    for child in ast.iter_child_nodes(node):
        if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef,
                                  ast.ExceptHandler)):
            yield from _own_nodes(child)


def is_exit(node: ast.AST, mod: Module) -> bool:
    if isinstance(node, ast.Call):
        return mod.dotted(node.func) in EXIT_CALLS
    if isinstance(node, ast.Raise) and node.exc is not None:
        exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        return mod.dotted(exc) == "SystemExit"
    return False


def main_guard(st: ast.stmt) -> bool:
    """``if __name__ == "__main__":`` (its body does not run when the driver imports the module;
    ``if __name__ != "__main__":`` does, and is not a guard)."""
    t = getattr(st, "test", None)
    return isinstance(st, ast.If) and isinstance(t, ast.Compare) and len(t.ops) == 1 \
        and isinstance(t.ops[0], ast.Eq) and "__name__" in ast.unparse(t)


def exits_at_import(mod: Module) -> bool:
    """Does importing ``mod`` (as the check's driver does) run an exit?"""
    return any(is_exit(n, mod) for st in mod.tree.body if not main_guard(st)
               for n in _own_nodes(ast.Module([st], [])))


def may_exit(fn: ast.AST, mod: Module) -> bool:
    """Does ``fn``'s own code contain an exit?"""
    return any(is_exit(n, mod) for n in ast.walk(fn))


WRITES = {"open", "json.dump", "pickle.dump", "torch.save", "write_text", "write_bytes", "dump"}


def _writes_file(fn: ast.AST, mod: Module) -> bool:
    for n in ast.walk(fn):
        if isinstance(n, ast.Call):
            name = mod.dotted(n.func)
            mode = n.args[1] if len(n.args) > 1 else next((k.value for k in n.keywords if k.arg == "mode"),
                                                           None)
            if name == "open" and isinstance(mode, ast.Constant) and any(c in str(mode.value) for c in "wax"):
                return True
            if name in WRITES - {"open"} or name.rsplit(".", 1)[-1] in ("write_text", "write_bytes", "dump"):
                return True
    return False


def forges_report(mods: list[Module]) -> bool:
    """Does importing the workspace run a workspace function that writes a file and exits (a
    report forged for the check's driver, which then never runs the training)?"""
    funcs = {(m.path, n.name): n for m in mods for n in m.tree.body if isinstance(n, ast.FunctionDef)}
    for mod in mods:
        for st in mod.tree.body:
            if main_guard(st):
                continue
            for n in _own_nodes(ast.Module([st], [])):
                called = isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                fn = funcs.get((mod.path, n.func.id)) if called else None
                if fn is not None and may_exit(fn, mod) and _writes_file(fn, mod):
                    return True
    return False
