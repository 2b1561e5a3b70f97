"""A call's arguments bound to a workspace function's parameters, the way Python binds them: the
one place the interpreters of the other analyses do it (positional, keyword, defaults, *args and
**kwargs); a call Python would reject raises Unsure."""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from . import Unsure

UNBOUND = object()  # ``missing=UNBOUND``: leave a parameter without argument or default unbound


def bind(fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda, args: list, kw: dict,
         default: Callable[[ast.expr], Any], *, missing: Any = UNBOUND, extra: Any = None,
         skip: frozenset[str] | set[str] = frozenset()) -> dict[str, Any]:
    """Parameter name -> value for ``fn(*args, **kw)``. ``default`` evaluates a default
    expression; ``missing``: the value of a parameter that gets neither (UNBOUND: left out);
    ``extra``: the value of ``*args`` / ``**kwargs``; ``skip``: parameters bound already
    (``self`` of a method)."""
    a = fn.args
    params = [p.arg for p in a.posonlyargs + a.args if p.arg not in skip]
    kwonly = [p.arg for p in a.kwonlyargs]
    if len(args) > len(params) and a.vararg is None:
        raise Unsure(f"call of {getattr(fn, 'name', 'a lambda')} with too many arguments")
    if a.kwarg is None and set(kw) - set(params) - set(kwonly):
        raise Unsure(f"call of {getattr(fn, 'name', 'a lambda')} with an unexpected keyword")
    all_params = [p.arg for p in a.posonlyargs + a.args]
    defaults = dict(zip(all_params[len(all_params) - len(a.defaults):], a.defaults, strict=True))
    defaults.update({p.arg: d for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d is not None})
    env = dict(zip(params, args, strict=False))
    for name in params[len(args):] + kwonly:
        if name in kw:
            env[name] = kw[name]
        elif name in defaults:
            env[name] = default(defaults[name])
        elif missing is not UNBOUND:
            env[name] = missing
    for star in (a.vararg, a.kwarg):
        if star is not None:
            env[star.arg] = extra
    return env
