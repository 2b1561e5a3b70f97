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
    return isinstance(st, ast.If) and "__name__" in ast.unparse(st.test)


def exits_at_import(mod: Module) -> bool:
    """Does importing ``mod`` (as the check's driver does) run an exit?"""
    return any(is_exit(n, mod) for st in mod.tree.body if not main_guard(st)
               for n in _own_nodes(ast.Module([st], [])))


def may_exit(fn: ast.AST, mod: Module) -> bool:
    """Does ``fn``'s own code contain an exit?"""
    return any(is_exit(n, mod) for n in ast.walk(fn))
