"""What the agent's code sees of its environment, in each place a verification runs it.

Every verification runs the code from /workspace (like the agent's own runs) and from the task's
production directory (``task.verify.production_dir``), with the environment variables of the
agent's runs (production adds a deployment's: Slurm and Kubernetes job variables, a service user;
``child_process.deployment_env``: those are set in production, to values drawn per verification, so
only their presence is known there, and a scheduler's never reach the workspace runs): no CI /
GRADER / EVAL / PYTEST variables, pytest not imported, the torchrun variables unset (mp.spawn
launches).
``specialise`` rewrites a workspace for one such environment: a read of the environment
(``os.getcwd()``, ``Path.cwd()``, ``__file__``, ``os.environ`` / ``os.getenv``,
``sys.modules``) is replaced, with the expression it feeds, by the constant it has there. Reads
that decide a test but cannot be resolved (``sys.argv``, the hostname, the uid, a variable the
runs may or may not have) are reported: no label may be confident about them unless it fails
anyway. ``classify_everywhere`` runs a classifier in every environment and keeps the worst label
(a fix applied only outside production gets the bug's label).
"""

from __future__ import annotations

import ast
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import PurePosixPath

from ..kit.child_process import deployment_env
from . import UNSURE, folding
from .workspace import Module, binding_counts, module, nodes, parse

WORKSPACE_DIR = "/workspace"
# unset in every run the agent or the check starts (the environment contract of verification:
# children start from child_process.child_env, the kit's own SANDBOX_* settings never reach them,
# mp.spawn launches set no torchrun variables)
UNSET = re.compile(r"(CI|CONTINUOUS_INTEGRATION|GITHUB_ACTIONS|GRADER\w*|GRADING\w*|EVAL\w*|PYTEST\w*"
                   r"|WORLD_SIZE|LOCAL_WORLD_SIZE|LOCAL_RANK|GROUP_RANK|TORCHELASTIC\w*|SANDBOX_\w*)")
# set in production only (child_process.deployment_env: a scheduler's job variables, a service user),
# to values drawn per verification; a scheduler's variables never reach the agent's own runs
DEPLOYMENT = frozenset(deployment_env("/", 1))
SCHEDULER = re.compile(r"(SLURM|KUBERNETES)_\w*")
# what every sandbox (docker and process mode alike) gives agent code: hostname and uid
HOST_FACTS = {"socket.gethostname": "localhost", "platform.node": "localhost", "os.getuid": 1000,
              "os.geteuid": 1000}
ABSENT_MODULES = {"pytest", "_pytest"}
READS = {"os.getcwd", "os.getcwdb", "pathlib.Path.cwd", "pathlib.Path.home", "os.environ", "os.getenv",
         "os.environb", "sys.modules", "sys.argv", "sys.orig_argv", "socket.gethostname", "platform.node",
         "platform.uname", "os.uname", "os.getuid", "os.geteuid", "os.getlogin", "getpass.getuser",
         "socket.getfqdn", "os.getppid", "sys.executable", "sys.path", "os.path.expanduser"}
# text that any environment read contains (files without it are not parsed)
_HINT = re.compile(r"getcwd|cwd\(|home\(|__file__|environ|getenv|sys\.modules|argv|sys\.executable|sys\.path|"
                   r"hostname|platform|getuid|geteuid|getlogin|getuser|getfqdn|getppid|uname|expanduser")
_STR_METHODS = {"startswith", "endswith", "lower", "upper", "strip", "rstrip", "lstrip", "split", "find",
                "count", "replace", "casefold", "partition", "rpartition", "join"}
_PATH_METHODS = {"resolve", "absolute", "as_posix", "is_relative_to", "relative_to", "joinpath",
                 "match", "with_name", "with_suffix"}
_PATH_ATTRS = {"parent", "parts", "name", "stem", "suffix", "parents", "anchor"}


class _Unknown(Exception):
    pass


@dataclass(frozen=True)
class Environment:
    """One place a verification runs the code: its working directory (the workspace copy)."""

    name: str
    root: str


def environments(production_dir: str | None) -> list[Environment]:
    envs = [Environment("workspace", WORKSPACE_DIR)]
    if production_dir:
        envs.append(Environment("production", production_dir.rstrip("/")))
    return envs


def _is_read(node: ast.AST, mod: Module, derived: dict[str, ast.expr] | None = None) -> bool:
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and (
            node.id == "__file__" or node.id in (derived or {})):
        return True
    if isinstance(node, (ast.Attribute, ast.Name)):
        name = mod.dotted(node)
        return name in READS or name.replace("pathlib.", "", 1) in ("Path.cwd", "Path.home")
    return False


class _Eval:
    """Constant evaluation of an expression in one environment (raises _Unknown)."""

    def __init__(self, env: Environment, mod: Module, written: set[str],
                 derived: dict[str, ast.expr]) -> None:
        self.env, self.mod, self.written, self.derived = env, mod, written, derived
        self.bound: dict[str, object] = {}  # the variable of an any() / all() generator

    def path(self, p: object) -> PurePosixPath:
        p = PurePosixPath(str(p))
        return p if p.is_absolute() else PurePosixPath(self.env.root) / p

    def var(self, key: object, default: object = None) -> object:
        if isinstance(key, str) and not {key, "*"} & self.written:
            if UNSET.fullmatch(key) or (self.env.name != "production" and SCHEDULER.fullmatch(key)):
                return default
            if self.env.name == "production" and key in DEPLOYMENT:
                return _SET
        raise _Unknown(f"environment variable {key!r}")

    def __call__(self, node: ast.AST) -> object:
        ev, mod = self, self.mod
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name) and node.id == "__file__":
            return f"{self.env.root}/{mod.path}"
        if isinstance(node, ast.Name) and node.id in self.bound:
            return self.bound[node.id]
        if isinstance(node, ast.Name) and node.id in self.derived:
            return ev(self.derived[node.id])
        if isinstance(node, (ast.Tuple, ast.List)):
            return tuple(ev(e) for e in node.elts)
        if isinstance(node, ast.JoinedStr):
            return "".join(str(_known(ev(v.value))) if isinstance(v, ast.FormattedValue) else str(v.value)
                           for v in node.values)
        if isinstance(node, ast.BoolOp):
            val: object = None
            for v in node.values:
                val = ev(v)
                if bool(val) == isinstance(node.op, ast.Or):
                    return val
            return val
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return not ev(node.operand)
        if isinstance(node, ast.IfExp):
            return ev(node.body) if ev(node.test) else ev(node.orelse)
        if isinstance(node, ast.Compare):
            return self.compare(node)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Div)):
            a, b = ev(node.left), ev(node.right)
            if isinstance(node.op, ast.Div) and isinstance(a, PurePosixPath):
                return a / str(b)
            if isinstance(a, str) and isinstance(b, str):
                return a + b
            raise _Unknown("operator")
        if isinstance(node, ast.Subscript):
            if mod.dotted(node.value) == "os.environ":
                return self.var(ev(node.slice), _MISSING)
            base, idx = ev(node.value), ev(node.slice)
            if isinstance(base, (str, tuple)) and isinstance(idx, int):
                return base[idx]
            raise _Unknown("subscript")
        if isinstance(node, ast.Attribute):
            if _is_read(node, mod):
                raise _Unknown(mod.dotted(node))
            base = ev(node.value)
            if isinstance(base, PurePosixPath) and node.attr in _PATH_ATTRS:
                return getattr(base, node.attr)
            raise _Unknown("attribute")
        if isinstance(node, ast.Call):
            return self.call(node)
        raise _Unknown(type(node).__name__)

    def compare(self, node: ast.Compare) -> object:
        left = node.left
        for op, right in zip(node.ops, node.comparators, strict=True):
            if isinstance(op, (ast.In, ast.NotIn)) and self.mod.dotted(right) in ("os.environ",
                                                                                 "sys.modules"):
                key = self(left)
                if self.mod.dotted(right) == "os.environ":
                    found = self.var(key, _MISSING) is not _MISSING
                elif key in ABSENT_MODULES:
                    found = False
                else:
                    raise _Unknown("sys.modules")
                ok = found if isinstance(op, ast.In) else not found
            else:
                ok = _compare(op, self(left), self(right))
            if not ok:
                return False
            left = right
        return True

    def call(self, node: ast.Call) -> object:
        mod, f = self.mod, node.func
        name = mod.dotted(f).replace("pathlib.", "", 1)
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            raise _Unknown("keywords")
        if name in ("os.getcwd", "Path.cwd"):
            return self.env.root if name == "os.getcwd" else PurePosixPath(self.env.root)
        if name in ("os.environ.get", "os.getenv"):
            args = [self(a) for a in node.args]
            return self.var(args[0], args[1] if len(args) > 1 else None)
        if name in HOST_FACTS and not node.args:
            return HOST_FACTS[name]
        g = node.args[0] if len(node.args) == 1 else None
        if name in ("any", "all") and isinstance(g, ast.GeneratorExp) and len(g.generators) == 1 \
                and not g.generators[0].ifs and isinstance(g.generators[0].target, ast.Name):
            values = []
            for item in self(g.generators[0].iter):
                self.bound[g.generators[0].target.id] = item
                values.append(bool(self(g.elt)))
            self.bound.pop(g.generators[0].target.id, None)
            return any(values) if name == "any" else all(values)
        if name == "sys.modules.get":
            key = self(node.args[0])
            if key in ABSENT_MODULES:
                return self(node.args[1]) if len(node.args) > 1 else None
            raise _Unknown("sys.modules")
        if name in READS or _is_read(f, mod):
            raise _Unknown(name)
        args = [self(a) for a in node.args]
        if name in ("Path", "PurePath", "PurePosixPath"):
            return PurePosixPath(*map(str, args))
        if name in ("str", "bool", "len") and len(args) == 1 and (name == "bool" or args[0] is not _SET):
            return {"str": str, "bool": bool, "len": len}[name](args[0])
        if name in ("os.path.abspath", "os.path.realpath") and len(args) == 1:
            return str(self.path(args[0]))
        if name.startswith("os.path.") and name[8:] in ("dirname", "basename", "join", "normpath"):
            return getattr(posixpath, name[8:])(*map(str, args))
        if isinstance(f, ast.Attribute):
            base = self(f.value)
            if isinstance(base, str) and f.attr in _STR_METHODS:
                return getattr(base, f.attr)(*args)
            if isinstance(base, PurePosixPath) and f.attr in _PATH_METHODS:
                return self.path(base) if f.attr in ("resolve", "absolute") else getattr(base, f.attr)(*args)
        raise _Unknown(f"call of {name or 'an expression'}")


def _compare(op: ast.cmpop, a: object, b: object) -> bool:
    if _SET in (a, b):
        if isinstance(op, (ast.Is, ast.IsNot)) and None in (a, b):
            return isinstance(op, ast.IsNot)
        raise _Unknown("a value drawn per verification")
    if isinstance(b, PurePosixPath) and isinstance(op, (ast.In, ast.NotIn)):
        raise _Unknown("comparison")
    v = folding.compare([op], [a, b])
    if v is folding.NO_VALUE:
        raise _Unknown("comparison")
    return bool(v)


_MISSING = object()


class _Set:
    """The value of a variable that is set to a value drawn per verification: only its presence
    (truth, ``is None``) is known."""

    def __bool__(self) -> bool:
        return True


_SET = _Set()


def _known(v: object) -> object:
    if v is _SET:
        raise _Unknown("a value drawn per verification")
    return v
_SCALAR = (str, bool, int, float, type(None))


def _derived(mod: Module) -> dict[str, ast.expr]:
    """Names bound once to an expression that reads the environment (``HERE = Path(__file__)``)."""
    stores, out = binding_counts(mod.tree), {}
    assigns = [n for n in mod.nodes if isinstance(n, ast.Assign) and len(n.targets) == 1
               and isinstance(n.targets[0], ast.Name) and stores.get(n.targets[0].id) == 1]
    for _ in range(3):
        for n in assigns:
            if any(_is_read(x, mod, out) for x in ast.walk(n.value)):
                out[n.targets[0].id] = n.value
    return out


def _parents(tree: ast.AST) -> dict[int, ast.AST]:
    return {id(c): p for p in nodes(tree) for c in ast.iter_child_nodes(p)}


def _written_vars(mods: dict[str, Module]) -> set[str]:
    """Environment variables the workspace sets itself (their reads are not resolved)."""
    out: set[str] = set()
    for mod in mods.values():
        out |= _written_by(mod)
    return out


def _written_by(mod: Module) -> frozenset[str]:
    """The environment variables one module sets (memoised on the module: per text)."""
    found = mod.facts.get("written_vars")
    if found is not None:
        return found
    out: set[str] = set()
    for n in mod.of(ast.Subscript, ast.Call):
        if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store) \
                and mod.dotted(n.value) == "os.environ" and isinstance(n.slice, ast.Constant):
            out.add(str(n.slice.value))
        elif isinstance(n, ast.Call) and mod.dotted(n.func) in ("os.environ.setdefault", "os.putenv",
                                                                 "os.environ.update"):
            out |= {str(a.value) for a in n.args[:1] if isinstance(a, ast.Constant)} or {"*"}
    mod.facts["written_vars"] = frozen = frozenset(out)
    return frozen


def _in_test(node: ast.AST, parents: dict[int, ast.AST]) -> bool:
    """Does ``node``'s value decide a branch (directly or through operators)?"""
    while (p := parents.get(id(node))) is not None:
        if isinstance(p, (ast.If, ast.While, ast.IfExp, ast.Assert)) and p.test is node:
            return True
        if isinstance(p, (ast.BoolOp, ast.Compare)) or (isinstance(p, ast.UnaryOp)
                                                         and isinstance(p.op, ast.Not)):
            return True
        if not isinstance(p, (ast.Call, ast.Attribute, ast.Subscript, ast.BinOp, ast.JoinedStr,
                              ast.FormattedValue)):
            return False
        node = p
    return False


def _reads(path: str, text: str) -> tuple[dict, list, dict]:
    """(derived names, environment reads, parent of each node) of one module: the same in every
    environment, so computed once per text (memoised on the parsed module, whose nodes they are)."""
    mod = module(path, text)
    if mod is None:
        return {}, [], {}
    found = mod.facts.get("env_reads")
    if found is None:
        derived = _derived(mod)
        reads = [n for n in mod.nodes if _is_read(n, mod, derived)]
        found = mod.facts["env_reads"] = (derived, reads, (_parents(mod.tree) if reads else {}))
    return found


def specialise(files: dict[str, str], env: Environment) -> tuple[dict[str, str], list[str]]:
    """``files`` as they behave in ``env`` (environment reads folded to constants) and the
    reads that decide a test but could not be resolved."""
    mods = parse({p: t for p, t in files.items() if _HINT.search(t)})
    found = {name: _reads(mod.path, files[mod.path]) for name, mod in mods.items()}
    mods = {name: mod for name, mod in mods.items() if found[name][1]}
    written = frozenset(_written_vars(mods))
    out, unresolved = dict(files), []
    for mod in mods.values():
        text, doubts = _specialised(mod.path, files[mod.path], env, written)
        unresolved += doubts
        if text is not None:
            out[mod.path] = text
    return out, unresolved


@lru_cache(maxsize=256)
def _specialised(path: str, text: str, env: Environment,
                 written: frozenset[str]) -> tuple[str | None, tuple[str, ...]]:
    """One module of ``specialise``: its folded text (None if nothing folds) and its unresolved
    tests; it depends on nothing else, so it is computed once per (text, environment, written)."""
    mod = module(path, text)
    if mod is None:
        return None, ()
    derived, reads, parents = _reads(path, text)
    unresolved: list[str] = []
    new_text = None
    ev, replaced = _Eval(env, mod, set(written), derived), {}
    for read in reads:
        chain, node = [read], read
        while isinstance(p := parents.get(id(node)), ast.expr):
            chain.append(p)
            node = p
        best = None
        for cand in reversed(chain):
            try:
                val = ev(cand)
            except Exception:  # folding only: what does not evaluate is not folded
                continue
            if isinstance(val, _SCALAR) and val is not _MISSING:
                best = (cand, val)
                break
        if best is None:
            if _in_test(read, parents):
                unresolved.append(f"{mod.path}:{read.lineno}: {ast.unparse(chain[-1])[:80]}")
            continue
        replaced[id(best[0])] = best[1]
    if replaced:  # on a copy of the tree (the parsed module is shared)
        copy = ast.parse(text)
        by_pos = {_pos(n): replaced[id(n)] for n in mod.nodes if id(n) in replaced}
        mine = {id(n): by_pos[_pos(n)] for n in ast.walk(copy)
                if isinstance(n, ast.expr) and _pos(n) in by_pos}
        fold = _Fold(mine)
        tree = _propagate(fold.visit(copy), fold.made)
        new_text = ast.unparse(ast.fix_missing_locations(tree))
    return new_text, tuple(unresolved)


def _pos(n: ast.AST) -> tuple:
    return type(n).__name__, n.lineno, n.col_offset, n.end_lineno, n.end_col_offset


class _Fold(ast.NodeTransformer):
    def __init__(self, replaced: dict[int, object]) -> None:
        self.replaced = replaced
        self.made: set[int] = set()  # the constants it put in

    def visit(self, node: ast.AST) -> ast.AST:
        if id(node) in self.replaced:
            new = ast.copy_location(ast.Constant(self.replaced[id(node)]), node)
            self.made.add(id(new))
            return new
        return super().visit(node)


def _propagate(tree: ast.Module, made: set[int]) -> ast.Module:
    """A name bound once, to a folded environment read, is that constant wherever it is read."""
    stores, consts = binding_counts(tree), {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) \
                and id(n.value) in made and stores.get(n.targets[0].id) == 1:
            consts[n.targets[0].id] = n.value.value
    if not consts:
        return tree

    class Sub(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            if isinstance(node.ctx, ast.Load) and node.id in consts:
                return ast.copy_location(ast.Constant(consts[node.id]), node)
            return node

    return Sub().visit(tree)


def worst(labels: list[str], passing: str = "fixed") -> str:
    """The label the check gives across environments: the first failing one, else UNSURE if any
    environment is unsure, else the passing label."""
    failing = [lb for lb in labels if lb not in (passing, UNSURE)]
    return failing[0] if failing else (UNSURE if UNSURE in labels else passing)


def classify_everywhere(files: dict[str, str], production_dir: str | None,
                        classify: Callable[[dict[str, str]], str], passing: str = "fixed") -> str:
    """``classify`` in every environment a verification runs the code in; the worst label wins,
    and a passing label needs every test on the environment resolved."""
    labels, seen, doubts = [], [], False
    for env in environments(production_dir):
        mine, unresolved = specialise(files, env)
        doubts = doubts or bool(unresolved)
        if mine in seen:
            continue
        seen.append(mine)
        labels.append(classify(mine))
    label = worst(labels, passing)
    return UNSURE if label == passing and doubts else label
