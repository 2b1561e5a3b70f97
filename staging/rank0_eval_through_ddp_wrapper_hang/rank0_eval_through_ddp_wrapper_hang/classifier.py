"""Mock-mode classifier for rank0_eval_through_ddp_wrapper_hang (``ast`` only, never runs code). From the
validation callback (an ``on_epoch_end`` that calls an evaluation) and the code it and fit() reach: which
ranks evaluate, which model they call (DDP wrapper / plain module), how rank 0's BatchNorm buffers reach
the other ranks, which rows the evaluation sees. Labels: fixed, bug (a collective only rank 0 enters),
replicas_differ, wrong_metrics, other_statistics, replicated_eval, skips_validation, replicated_training,
syncbn_unsupported; unsure for every shape the rules do not place."""

from __future__ import annotations

import ast
import re
from functools import lru_cache
from pathlib import Path

from sandbox_env.analysis import UNSURE, unsure_if_not_followed
from sandbox_env.analysis.config import literal_fields
from sandbox_env.analysis.environment import classify_everywhere, worst
from sandbox_env.analysis.exits import exits_at_import
from sandbox_env.analysis.tamper import patches
from sandbox_env.analysis.workspace import live_files, parse
from sandbox_env.suite.tasks import load_task

COLLECTIVES = {"broadcast", "broadcast_object_list", "all_reduce", "all_gather", "all_gather_object", "send",
               "recv", "scatter", "scatter_object_list", "reduce", "all_to_all", "_broadcast_coalesced"}
RANK_TESTS = ("is_main", "get_rank", "rank()", "rank ==", "rank !=", ".rank")


@lru_cache(maxsize=1)
def _task():
    return load_task(Path(__file__).parent)


def _name(call: ast.Call) -> str:
    return getattr(call.func, "attr", None) or getattr(call.func, "id", None) or ""


def _calls(nodes) -> list[ast.Call]:
    return [n for f in nodes for n in ast.walk(f) if isinstance(n, ast.Call)]


def _reach(fns: list[ast.AST], funcs: dict[str, ast.FunctionDef]) -> list[ast.AST]:
    """``fns`` and the workspace functions and methods they call by name (transitively)."""
    out, todo, seen = [], list(fns), {f.name for f in fns}
    while todo:
        f = todo.pop()
        if any(f is g for g in out):
            continue
        out.append(f)
        for c in _calls([f]):
            n = _name(c)
            if n in funcs and n not in seen and funcs[n] is not f:
                seen.add(n)
                todo.append(funcs[n])
    return out


def _guarded(node: ast.AST, fn: ast.AST) -> str | None:
    """The source of the rank test around ``node`` inside ``fn`` (None: every rank runs it)."""
    for n in ast.walk(fn):
        if isinstance(n, ast.If) and any(node is x for b in n.body for x in ast.walk(b)):
            test = ast.unparse(n.test)
            if any(t in test for t in RANK_TESTS):
                return test
    return None


def classify(files: dict[str, str]) -> str:
    """The worst label over the environments and over the config values the runs use (the repo's
    defaults, the check's [verify.set]): a test of a config field against a constant is resolved."""
    t, live = _task(), live_files(files, _task().entry.modules)
    mods = parse(live)
    cfg = literal_fields(mods["config"].tree if "config" in mods else None, "TrainConfig")
    sets = [cfg, {**cfg, **{k: v for k, v in t.verify.set.items() if not str(v).startswith("$")}}]
    return worst([classify_everywhere(live, t.verify.production_dir, lambda f, v=v: _classify(f, v))
                  for v in sets])


class _Prune(ast.NodeTransformer):
    """Branches on constants (what environment folding leaves, config fields tested against constants)."""

    def __init__(self, values: dict) -> None:
        self.values = values

    def visit_Compare(self, node: ast.Compare):
        field, ops, right = ast.unparse(node.left).rsplit(".", 1)[-1], node.ops, node.comparators[0]
        if "cfg." in ast.unparse(node.left) and field in self.values and len(ops) == 1 and \
                isinstance(ops[0], (ast.Eq, ast.NotEq)) and isinstance(right, ast.Constant):
            return ast.Constant((self.values[field] == right.value) == isinstance(ops[0], ast.Eq))
        return node

    def visit_If(self, node: ast.If):
        self.generic_visit(node)
        if isinstance(node.test, ast.Constant):
            return (node.body if node.test.value else node.orelse) or ast.Pass()
        return node

    def visit_IfExp(self, node: ast.IfExp):
        self.generic_visit(node)
        if isinstance(node.test, ast.Constant):
            return node.body if node.test.value else node.orelse
        return node


def _pruned(text: str, values: dict) -> str:
    try:
        return ast.unparse(_Prune(values).visit(ast.parse(text)))
    except (SyntaxError, RecursionError, ValueError):
        return text


def _classify(files: dict[str, str], values: dict) -> str:
    mods = parse({k: _pruned(v, values) if k.endswith(".py") else v for k, v in files.items()})
    ms = list(mods.values())
    if any(exits_at_import(m) for m in ms) or patches(ms, ("torch",)):
        return UNSURE
    return _label(ms)


@unsure_if_not_followed  # code the analysis does not follow: never a guess
def _label(ms) -> str:
    funcs = {f.name: f for m in ms for f in m.of(ast.FunctionDef)}
    text = "\n".join(ast.unparse(m.tree) for m in ms)
    train = funcs.get("train")
    if train is None or "fit" not in {_name(c) for c in _calls([train])}:
        return UNSURE
    if not any(_name(c) in ("setup", "init_process_group") for c in _calls(_reach([train], funcs))):
        return "replicated_training"
    if "convert_sync_batchnorm" in text:
        return "syncbn_unsupported"  # CPU modules: SyncBatchNorm raises when DDP wraps them
    hooks = [f for m in ms for c in m.of(ast.ClassDef) for f in c.body
             if isinstance(f, ast.FunctionDef) and f.name == "on_epoch_end"]
    val = [f for f in hooks if "trainer.metrics =" in ast.unparse(f)]
    evals = [(f, c) for f in val for c in _calls([f]) if "evaluat" in _name(c)]
    if not evals:
        if any("train_loss" in ast.unparse(f) for f in val):
            return "skips_validation"
        return UNSURE
    if len(evals) != 1:
        return UNSURE
    hook, call = evals[0]
    rank0 = _guarded(call, hook) is not None
    arg = ast.unparse(call.args[0]) if call.args else ""
    if arg.isidentifier():  # a local: what it was assigned
        assigns = [a for a in ast.walk(hook) if isinstance(a, ast.Assign)
                   and any(ast.unparse(x) == arg for x in a.targets)]
        if len(assigns) != 1:
            return UNSURE
        arg = ast.unparse(assigns[0].value)
    wrapped = arg in ("trainer.model", "self.model")
    if not wrapped and not ("unwrap" in arg or arg.endswith(".module")):
        return UNSURE
    bb_false = any(_name(c) == "DistributedDataParallel" and any(
        k.arg == "broadcast_buffers" and isinstance(k.value, ast.Constant) and k.value.value is False
        for k in c.keywords) for m in ms for c in m.of(ast.Call))
    sync = _buffer_sync(_reach([hook, *[f for f in funcs.values() if f.name == "fit"]], funcs))
    eval_src = ast.unparse(funcs[_name(call)]) if _name(call) in funcs else ""
    if wrapped and not bb_false:
        if rank0:
            return "bug"  # rank 0 alone enters DDP's buffer broadcast
        sync = sync or "bcast"  # every rank's DDP forward broadcasts rank 0's buffers
    if sync == "average":
        return "other_statistics"
    if sync in (None, "pairwise"):
        return "replicas_differ"
    if sync != "bcast":
        return UNSURE
    rows = _rows(hook, call, eval_src, funcs, [f for m in ms for f in m.of(ast.FunctionDef)])
    if rows is None:
        return UNSURE
    if rank0:
        return {"full": "fixed", "shard": "wrong_metrics", "exact": UNSURE}[rows]
    return {"full": "replicated_eval", "shard": "wrong_metrics", "exact": "fixed"}[rows]


@lru_cache(maxsize=1)
def _original() -> frozenset[str]:
    """The functions of the original repo (none of them hands buffers over), as source."""
    root = _task().root / "repo"
    return frozenset(ast.unparse(f) for p in root.glob("*.py")
                     for f in ast.walk(ast.parse(p.read_text())) if isinstance(f, ast.FunctionDef))


def _buffer_sync(scope: list[ast.AST]) -> str | None:
    """How the reachable code hands rank 0's buffers to the other ranks (None: it does not)."""
    found = set()
    for f in scope:
        src = ast.unparse(f)
        if src in _original():
            continue
        names = {_name(c) for c in _calls([f])}
        if "buffers" not in src:
            if ("state_dict" in src and names & COLLECTIVES) or "getattr(dist" in src:
                found.add("unknown")  # a state handed over some other way
            continue
        known = len(found)
        for c in _calls([f]):
            n = _name(c)
            if n in ("send", "recv", "isend", "irecv"):
                found.add("pairwise")
            elif n == "all_reduce" and "buffers" in src:
                found.add("average")
            elif n in ("broadcast", "broadcast_object_list"):
                found.add("pairwise" if _guarded(c, f) else "bcast")
        if len(found) == known and (re.search(r"\bdist\.\w+\(", src) or names & COLLECTIVES):
            found.add("unknown")  # buffers touched next to collectives the rules do not know
    return "mixed" if len(found) > 1 else next(iter(found), None)


def _rows(hook: ast.AST, call: ast.Call, eval_src: str, funcs: dict, every: list) -> str | None:
    """Which rows the evaluation gives each evaluating rank: "full", "shard" (DistributedSampler, no
    reduction) or "exact" (strided shard, sums all-reduced); None: unknown."""
    if "Subset" in eval_src and "all_reduce" in eval_src and "DistributedSampler" not in eval_src:
        return "exact"
    loader = next((ast.unparse(a) for a in call.args[1:2]), "")
    cls = [c for c in every if c.name == "on_fit_start" and loader.split(".")[-1] in ast.unparse(c)]
    built = " ".join(ast.unparse(c) for c in cls) + ast.unparse(hook)
    if "DataLoader(" in built and "val_set" in built and "Sampler" not in built:
        return "full"
    if "val_loader()" not in built or "val_loader" not in funcs:
        return None
    ret = next((st.value for st in funcs["val_loader"].body if isinstance(st, ast.Return)), None)
    if not isinstance(ret, ast.Call):
        return None
    if _name(ret) == "DataLoader" and "Sampler" not in ast.unparse(ret):
        return "full"
    if _name(ret) == "_loader" and "_loader" in funcs:
        return "full" if "shard=False" in ast.unparse(ret) else \
            "shard" if "DistributedSampler" in ast.unparse(funcs["_loader"]) else None
    return None
