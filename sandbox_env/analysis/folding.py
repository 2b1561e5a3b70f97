"""Constant folding, the one place: the value of an operator, a unary operator or a comparison
chain on known Python values, as the interpreters of the other analyses compute it."""

from __future__ import annotations

import ast
import operator
from collections.abc import Sequence


class _NoValue:
    def __repr__(self) -> str:
        return "NO_VALUE"


NO_VALUE = _NoValue()  # the operation cannot be folded (unknown operator, or it would raise)

BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
          ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
          ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor,
          ast.LShift: operator.lshift, ast.RShift: operator.rshift}
UNARY = {ast.Not: operator.not_, ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}
COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
           ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not,
           ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}


def binary(op: ast.operator, a: object, b: object) -> object:
    """``a <op> b``, or NO_VALUE (huge powers and shifts are not folded)."""
    if isinstance(op, (ast.Pow, ast.LShift)) and not (isinstance(b, (int, float)) and abs(b) <= 64):
        return NO_VALUE
    try:
        return BINARY[type(op)](a, b)
    except (KeyError, TypeError, ValueError, ArithmeticError):
        return NO_VALUE


def unary(op: ast.unaryop, a: object) -> object:
    try:
        return UNARY[type(op)](a)
    except (KeyError, TypeError):
        return NO_VALUE


def compare(ops: Sequence[ast.cmpop], values: Sequence[object]) -> object:
    """A comparison chain ``v0 op0 v1 op1 v2 ...`` (a bool), or NO_VALUE."""
    try:
        return all(bool(COMPARE[type(op)](a, b)) for op, a, b in zip(ops, values, values[1:], strict=False))
    except (KeyError, TypeError, ValueError):
        return NO_VALUE
