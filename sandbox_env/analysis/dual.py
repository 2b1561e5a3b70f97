"""Small tensors of dual numbers and the torch operations over them.

A ``T`` holds values and one forward-mode tangent per element (flat, row-major), so an
interpreter can run a model's forward concretely on a probe batch and still see whether an
output depends on the input (a detached or clamped path shows as a zero tangent). ``TORCH``
maps ``torch.<fn>``, ``torch.nn.functional.<fn>`` and ``Tensor.<method>`` names to these
operations; anything else raises ``Unknown``.
"""

from __future__ import annotations

import ast
import itertools
import math
from functools import partial

from . import Unsure


class Unknown(Unsure):
    """An operation these tensors do not model."""


class T:
    """A small tensor of dual numbers: values ``v`` and one tangent ``d`` (flat, row-major)."""

    serial = 0

    def __init__(self, shape, v, d=None, isbool=False):
        self.shape, self.v, self.isbool = tuple(shape), list(v), isbool
        self.d = list(d) if d is not None and not isbool else [0.0] * len(self.v)
        T.serial += 1
        self.id = T.serial


def as_t(x) -> T:
    if isinstance(x, T):
        return x
    if isinstance(x, (bool, int, float)):
        return T((), [float(x)], isbool=isinstance(x, bool))
    raise Unknown(f"not a tensor: {type(x).__name__}")


def _bshape(*shapes):
    n = max(len(s) for s in shapes)
    out = []
    for dims in zip(*[(1,) * (n - len(s)) + s for s in shapes], strict=False):
        big = {x for x in dims if x != 1}
        if len(big) > 1:
            raise Unknown("shapes do not broadcast")
        out.append(big.pop() if big else 1)
    return tuple(out)


def _bindex(shape, out):
    shape = (1,) * (len(out) - len(shape)) + shape
    idx = []
    for multi in itertools.product(*map(range, out)):
        i = 0
        for m, s in zip(multi, shape, strict=False):
            i = i * s + (m if s > 1 else 0)
        idx.append(i)
    return idx


def ew(fn, *args, isbool=False) -> T:
    """Elementwise ``fn`` over (value, tangent) pairs, with broadcasting."""
    ts = [as_t(a) for a in args]
    out = _bshape(*(t.shape for t in ts))
    idx = [_bindex(t.shape, out) for t in ts]
    res = [
        fn(*[(t.v[ix[k]], t.d[ix[k]]) for t, ix in zip(ts, idx, strict=False)]) for k in range(len(idx[0]))
    ]
    return T(out, [r[0] for r in res], [r[1] for r in res], isbool)


def _div(a, b):
    if b[0] == 0:
        raise Unknown("division by zero")
    return a[0] / b[0], (a[1] * b[0] - a[0] * b[1]) / b[0] ** 2


def _pow(a, b):
    if b[1] or (a[0] <= 0 and b[0] != int(b[0])):
        raise Unknown("pow")
    return a[0] ** b[0], b[0] * a[0] ** (b[0] - 1) * a[1] if b[0] else 0.0


def _sgn(x):
    return (x > 0) - (x < 0)


def _phi(x):
    return 0.5 * (1 + math.erf(x / math.sqrt(2)))


BIN = {
    ast.Add: lambda a, b: (a[0] + b[0], a[1] + b[1]),
    ast.Sub: lambda a, b: (a[0] - b[0], a[1] - b[1]),
    ast.Mult: lambda a, b: (a[0] * b[0], a[1] * b[0] + a[0] * b[1]),
    ast.Div: _div,
    ast.Pow: _pow,
}
UNARY = {
    "abs": lambda a: (abs(a[0]), _sgn(a[0]) * a[1]),
    "neg": lambda a: (-a[0], -a[1]),
    "negative": lambda a: (-a[0], -a[1]),
    "relu": lambda a: a if a[0] > 0 else (0.0, 0.0),
    "sqrt": lambda a: (math.sqrt(a[0]), a[1] / (2 * math.sqrt(a[0]))),
    "exp": lambda a: (math.exp(a[0]), math.exp(a[0]) * a[1]),
    "log": lambda a: (math.log(a[0]), a[1] / a[0]),
    "reciprocal": lambda a: _div((1.0, 0.0), a),
    "sign": lambda a: (float(_sgn(a[0])), 0.0),
    "square": lambda a: (a[0] ** 2, 2 * a[0] * a[1]),
    "tanh": lambda a: (math.tanh(a[0]), (1 - math.tanh(a[0]) ** 2) * a[1]),
    "gelu": lambda a: (
        a[0] * _phi(a[0]),
        a[1] * (_phi(a[0]) + a[0] * math.exp(-(a[0] ** 2) / 2) / math.sqrt(2 * math.pi)),
    ),
    "clone": lambda a: a,
    "detach": lambda a: (a[0], 0.0),
}
CMP = {ast.Gt: "gt", ast.GtE: "ge", ast.Lt: "lt", ast.LtE: "le", ast.Eq: "eq", ast.NotEq: "ne"}
CMPF = {
    "gt": lambda x, y: x > y,
    "ge": lambda x, y: x >= y,
    "lt": lambda x, y: x < y,
    "le": lambda x, y: x <= y,
    "eq": lambda x, y: x == y,
    "ne": lambda x, y: x != y,
}
for _a, _b in (
    ("greater", "gt"),
    ("greater_equal", "ge"),
    ("less", "lt"),
    ("less_equal", "le"),
    ("not_equal", "ne"),
):
    CMPF[_a] = CMPF[_b]


def compare(op, a, b) -> T:
    return ew(lambda x, y: (float(CMPF[op](x[0], y[0])), 0.0), a, b, isbool=True)


def binop(op, a, b):
    if not isinstance(a, T) and not isinstance(b, T):
        if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
            raise Unknown("operands")
        return (
            {
                ast.Add: a + b,
                ast.Sub: a - b,
                ast.Mult: a * b,
                ast.Pow: a**b if a > 0 else None,
                ast.Div: a / b if b else None,
            }.get(type(op))
            if type(op) in BIN
            else _raise("op")
        )
    if isinstance(op, (ast.BitAnd, ast.BitOr)) and as_t(a).isbool and as_t(b).isbool:
        f = min if isinstance(op, ast.BitAnd) else max
        return ew(lambda x, y: (f(x[0], y[0]), 0.0), a, b, isbool=True)
    if type(op) not in BIN or (isinstance(op, ast.Sub) and (as_t(a).isbool or as_t(b).isbool)):
        raise Unknown(f"tensor operator {type(op).__name__}")  # e.g. `1 - bool_mask` raises in torch
    return ew(BIN[type(op)], a, b)


def _raise(what):
    raise Unknown(what)


def reduce(t, kind, dim=None, keepdim=False) -> T:
    t = as_t(t)
    n = len(t.shape)
    dims = (
        set(range(n))
        if dim is None or dim == ()
        else {d % n for d in ((dim,) if isinstance(dim, int) else dim)}
    )
    full = tuple(1 if i in dims else s for i, s in enumerate(t.shape))
    groups: dict = {}
    for k, multi in enumerate(itertools.product(*map(range, t.shape))):
        groups.setdefault(tuple(0 if i in dims else m for i, m in enumerate(multi)), []).append(k)
    v, d = [], []
    for key in itertools.product(*map(range, full)):
        ks = groups[key]
        if kind in ("max", "min"):
            best = (max if kind == "max" else min)(t.v[k] for k in ks)
            ties = {t.d[k] for k in ks if t.v[k] == best}
            if len(ties) > 1:
                raise Unknown("tie in a max/min reduction")
            v.append(best)
            d.append(ties.pop())
        else:
            v.append(sum(t.v[k] for k in ks) / (len(ks) if kind == "mean" else 1))
            d.append(sum(t.d[k] for k in ks) / (len(ks) if kind == "mean" else 1))
    shape = full if keepdim else tuple(s for i, s in enumerate(t.shape) if i not in dims)
    return T(shape, v, d)


def clamp(x, min=None, max=None):
    def f(a, lo, hi):
        if lo is not None and a[0] < lo[0]:
            a = lo
        return hi if hi is not None and a[0] > hi[0] else a

    args = [x] + [m for m in (min, max) if m is not None]
    lo, hi = min is not None, max is not None
    return ew(lambda a, *r: f(a, r[0] if lo else None, r[-1] if hi else None), *args)


def _minmax(kind):
    def fn(x, other=None, dim=None, keepdim=False):
        if isinstance(other, T):
            return ew(lambda a, b: a if (a[0] >= b[0] if kind == "max" else a[0] <= b[0]) else b, x, other)
        dim = other if other is not None else dim
        if dim is None:
            return reduce(x, kind)
        return (reduce(x, kind, dim, keepdim), None)  # (values, indices)

    return fn


def _norm(x, p=2, dim=None, keepdim=False, ord=None):
    p = ord if ord is not None else p
    if p == math.inf:
        return reduce(ew(UNARY["abs"], x), "max", dim, keepdim)
    if p == 2:
        return ew(UNARY["sqrt"], reduce(ew(UNARY["square"], x), "sum", dim, keepdim))
    raise Unknown("norm order")


def _where(c, a=None, b=None):
    if a is None or b is None:
        raise Unknown("where(cond)")
    return ew(lambda cc, x, y: x if cc[0] else y, c, a, b)


def _like(fill):
    return lambda x, *a, **k: T(as_t(x).shape, [fill(*a) if a else fill()] * len(as_t(x).v))


def _new_tensor(v, *a, **k):
    if isinstance(v, T):
        return T(v.shape, v.v, v.d, v.isbool)
    if isinstance(v, (int, float)):
        return as_t(v)
    raise Unknown("tensor(...) of a sequence")


def _to(x, *args, **kw):
    x = as_t(x)
    dt = kw.get("dtype", args[0] if args else None)
    if isinstance(dt, T):
        dt = "float32" if not dt.isbool else "bool"
    if dt in (None, "float32", "float64", "cpu") or (isinstance(dt, str) and dt.startswith("cpu")):
        return T(x.shape, x.v, x.d)
    if dt == "bool":
        return T(x.shape, [float(bool(v)) for v in x.v], isbool=True)
    raise Unknown(f"dtype {dt}")


def _unary(f, x, *a, **kw):
    return ew(f, x)


def _cmp(op, a, b, *r, **kw):
    return compare(op, a, b)


def _lerp(a, b, w):
    return binop(ast.Add(), a, binop(ast.Mult(), w, binop(ast.Sub(), b, a)))


TORCH = {  # torch.<fn>, torch.nn.functional.<fn> and Tensor.<method> (tensor first)
    **{k: partial(_unary, f) for k, f in UNARY.items()},
    **{k: partial(_cmp, k) for k in CMPF},
    "add": lambda a, b, **k: binop(ast.Add(), a, b),
    "sub": lambda a, b, **k: binop(ast.Sub(), a, b),
    "mul": lambda a, b, **k: binop(ast.Mult(), a, b),
    "multiply": lambda a, b, **k: binop(ast.Mult(), a, b),
    "div": lambda a, b, **k: binop(ast.Div(), a, b),
    "divide": lambda a, b, **k: binop(ast.Div(), a, b),
    "true_divide": lambda a, b, **k: binop(ast.Div(), a, b),
    "pow": lambda a, b, **k: binop(ast.Pow(), a, b),
    "where": _where,
    "clamp": clamp,
    "clip": clamp,
    "lerp": _lerp,
    "hardtanh": lambda x, lo=-1.0, hi=1.0: clamp(x, lo, hi),
    "clamp_min": lambda x, m: clamp(x, min=m),
    "clamp_max": lambda x, m: clamp(x, max=m),
    "minimum": lambda a, b: _minmax("min")(a, as_t(b)),
    "maximum": lambda a, b: _minmax("max")(a, as_t(b)),
    "fmin": lambda a, b: _minmax("min")(a, as_t(b)),
    "fmax": lambda a, b: _minmax("max")(a, as_t(b)),
    "max": _minmax("max"),
    "min": _minmax("min"),
    "amax": lambda x, dim=None, keepdim=False: reduce(x, "max", dim, keepdim),
    "amin": lambda x, dim=None, keepdim=False: reduce(x, "min", dim, keepdim),
    "sum": lambda x, dim=None, keepdim=False, **k: reduce(x, "sum", dim, keepdim),
    "mean": lambda x, dim=None, keepdim=False, **k: reduce(x, "mean", dim, keepdim),
    "norm": _norm,
    "vector_norm": _norm,
    "linalg.norm": _norm,
    "linalg.vector_norm": _norm,
    "ones_like": _like(lambda: 1.0),
    "zeros_like": _like(lambda: 0.0),
    "full_like": _like(float),
    "tensor": _new_tensor,
    "as_tensor": _new_tensor,
    "scalar_tensor": _new_tensor,
    "new_tensor": lambda x, v, **k: _new_tensor(v),
    "new_ones": lambda x, s=(), **k: _shaped(s, 1.0),
    "new_full": lambda x, s, v, **k: _shaped(s, v),
    "ones": lambda s=(), **k: _shaped(s, 1.0),
    "zeros": lambda s=(), **k: _shaped(s, 0.0),
    "full": lambda s, v, **k: _shaped(s, v),
    "logical_not": lambda x: ew(lambda a: (float(not a[0]), 0.0), x, isbool=True),
    "logical_and": lambda a, b: binop(ast.BitAnd(), a, b),
    "logical_or": lambda a, b: binop(ast.BitOr(), a, b),
    "to": _to,
    "float": _to,
    "double": _to,
    "type_as": lambda x, o: _to(x),
    "bool": lambda x: _to(x, "bool"),
    "masked_fill": lambda x, m, v: _where(m, v, x),
}


def _shaped(s, v):
    s = (s,) if isinstance(s, int) else tuple(s)
    return T(s, [float(v)] * math.prod(s))


class Linear:
    def __init__(self, rng, i, o, bias=True, **kw):
        if kw:
            raise Unknown("Linear options")
        b = 1 / math.sqrt(i)
        self.w = [[(rng.uniform(-b, b), rng.uniform(-1, 1)) for _ in range(i)] for _ in range(o)]
        self.b = [(rng.uniform(-b, b), rng.uniform(-1, 1)) if bias else (0.0, 0.0) for _ in range(o)]

    def __call__(self, x):
        x = as_t(x)
        if len(x.shape) != 2 or x.shape[1] != len(self.w[0]):
            raise Unknown("Linear input shape")
        n, i = x.shape
        v, d = [], []
        for r in range(n):
            row = [(x.v[r * i + k], x.d[r * i + k]) for k in range(i)]
            for w, b in zip(self.w, self.b, strict=False):
                v.append(b[0] + sum(a[0] * c[0] for a, c in zip(row, w, strict=False)))
                d.append(b[1] + sum(a[1] * c[0] + a[0] * c[1] for a, c in zip(row, w, strict=False)))
        return T((n, len(self.w)), v, d)


def layer_norm(x, eps=1e-5):
    mu = reduce(x, "mean", -1, True)
    c = binop(ast.Sub(), x, mu)
    var = reduce(binop(ast.Mult(), c, c), "mean", -1, True)
    return binop(ast.Div(), c, ew(UNARY["sqrt"], binop(ast.Add(), var, eps)))
