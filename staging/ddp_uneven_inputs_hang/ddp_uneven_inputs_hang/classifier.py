"""Mock-mode classifier for ddp_uneven_inputs_hang (``ast`` only, never runs code).

Labels: fixed (every rank runs the steps of the rank with the most batches, a rank out of data
stepping with a zero-weight or empty batch; or Join with the loss's per-step collective removed or
shadowed in order), bug (the epoch loop still ends per rank: a barrier or a longer timeout changes
nothing), loss_collective_unmatched (DDP's Join alone: the loss's all-reduce is not shadowed),
rows_dropped (truncated to the shortest rank), rows_repeated (batches cycled), rows_rebalanced (rows
moved between ranks), wrong_weighting (a padded batch counted in the step total, or Join dividing by
the active ranks), world_size_specific (a fixed peer / rank 0 assumed longest), replicated_work,
steps_skipped (the timeout caught), bug_masked (the run command's defaults or output special-cased).
Anything else: unsure.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

from sandbox_env.analysis import UNSURE, unsure_if_not_followed
from sandbox_env.analysis.exits import exits_at_import
from sandbox_env.analysis.tamper import patches
from sandbox_env.analysis.workspace import live_files, parse
from sandbox_env.suite.tasks import load_task

DATA_DEFAULTS = {"data_seed": 2024, "n_shards": 10, "min_shard_rows": 40, "max_shard_rows": 180,
                 "batch_size": 32, "world_size": 2}


@lru_cache(maxsize=1)
def _entry() -> list[str]:
    return load_task(Path(__file__).parent).entry.modules


def _reach(fn: ast.AST, funcs: dict[str, ast.AST], seen: set[str] | None = None) -> list[ast.AST]:
    """``fn`` and the workspace functions and methods it calls by name (transitively)."""
    seen = set() if seen is None else seen
    out = [fn]
    for n in ast.walk(fn):
        if isinstance(n, ast.Call):
            name = getattr(n.func, "id", None) or getattr(n.func, "attr", None)
            if name in funcs and name not in seen:
                seen.add(name)
                out += _reach(funcs[name], funcs, seen)
    return out


def _text(fns: list[ast.AST]) -> str:
    return "\n".join(ast.unparse(f) for f in fns)


def _calls(fns: list[ast.AST]) -> list[ast.Call]:
    return [n for f in fns for n in ast.walk(f) if isinstance(n, ast.Call)]


def _name(c: ast.Call) -> str:
    return getattr(c.func, "attr", None) or getattr(c.func, "id", None) or ""


def _padding(c: ast.Call) -> str | None:
    """A ``Batch(x, y, weight)`` built with weight zero: "zero_weight", or "empty" (no rows)."""
    args = list(c.args) + [k.value for k in c.keywords]
    if len(args) != 3 or not isinstance(args[2], ast.Call) or _name(args[2]) not in ("zeros", "zeros_like"):
        return None
    x = ast.unparse(args[0])
    return "empty" if x.startswith(("torch.zeros(0", "torch.empty(0")) else "zero_weight"


def classify(files: dict[str, str]) -> str:
    mods = parse(live_files(files, _entry()))
    ms = list(mods.values())
    if any(exits_at_import(m) for m in ms) or patches(ms, ("torch",)):
        return UNSURE
    funcs = {f.name: f for m in ms for f in m.of(ast.FunctionDef)}
    classes = {c.name: c for m in ms for c in m.of(ast.ClassDef)}
    need = {"run_epoch", "train_step", "fit", "files_for_rank", "main", "init_distributed"}
    if not need <= set(funcs) or not {"GlobalMeanLoss", "TelemetryDataModule", "TrainConfig"} <= set(classes):
        return UNSURE
    return _label(funcs, classes)


@unsure_if_not_followed  # code the analysis does not follow: never a guess
def _label(funcs: dict, classes: dict) -> str:
    split = funcs["files_for_rank"]
    body = [s for s in split.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if not (len(body) == 1 and isinstance(body[0], ast.Return) and isinstance(body[0].value, ast.Subscript)
            and ast.unparse(body[0].value.slice) == f"{split.args.args[1].arg}::{split.args.args[2].arg}"):
        return "rows_rebalanced" if "DistributedSampler" in ast.unparse(split) else UNSURE
    dm = classes["TelemetryDataModule"]
    if any(isinstance(n, (ast.ListComp, ast.For)) and "files_for_rank" in ast.unparse(n)
           for n in ast.walk(dm)):
        return "replicated_work"
    main = funcs["main"]
    spawn = [n for n in ast.walk(main) if isinstance(n, ast.If) and any(
        isinstance(c, ast.Call) and _name(c) == "spawn" for c in ast.walk(n))]
    if spawn or not any(isinstance(c, ast.Call) and _name(c) == "spawn" for c in ast.walk(main)):
        return "bug_masked"
    fit = funcs["fit"]
    if any(isinstance(n, ast.Try) and "run_epoch" in ast.unparse(n) for n in ast.walk(fit)):
        return "steps_skipped"
    epoch = _reach(funcs["run_epoch"], funcs)
    step = _reach(funcs["train_step"], funcs)
    text, calls = _text(epoch), _calls(epoch)
    names = {_name(c) for c in calls}
    if names & {"send", "recv", "isend", "irecv"} or any(
            _name(c) == "broadcast" and "src=0" in ast.unparse(c) for c in calls):
        return "world_size_specific"
    if any(isinstance(n, ast.Compare) and "world_size" in ast.unparse(n.left) and
           isinstance(n.comparators[0], ast.Constant) for f in epoch for n in ast.walk(f)):
        return "world_size_specific"
    if "ReduceOp.MIN" in text or "all_reduce_min" in names:
        return "rows_dropped"
    if "cycle" in names:
        return "rows_repeated"
    join = [c for c in calls if _name(c) == "Join" or (_name(c) == "join" and "net" in ast.unparse(c.func))]
    loss = classes["GlobalMeanLoss"]
    fwd = next(f for f in loss.body if isinstance(f, ast.FunctionDef) and f.name == "forward")
    direct = [s for s in fwd.body if "all_reduce" in ast.unparse(s) and not isinstance(s, ast.If)]
    if join:
        if len(join) != 1:
            return UNSURE
        j = join[0]
        if any(k.arg != "divide_by_initial_world_size" for k in j.keywords):
            return UNSURE
        if j.keywords:
            kw = next(k for k in j.keywords if k.arg == "divide_by_initial_world_size")
            if isinstance(kw.value, ast.Constant) and kw.value.value is False:
                return "wrong_weighting"
            return UNSURE
        members = ast.unparse(j.args[0]) if j.args else ""
        joinable = any(ast.unparse(b) == "Joinable" for b in loss.bases)
        if joinable:
            st = _text(step)
            notify = "notify_join_context" in ast.unparse(loss)
            first = members.startswith("[self.loss_fn")
            before = st.find("step_total(") != -1 and st.find("step_total(") < st.find("self.net(")
            return "fixed" if notify and first and before and not direct else UNSURE
        if direct:
            return "loss_collective_unmatched"
        exchanged = "ReduceOp.MAX" in text or "all_reduce_max" in names
        return "fixed" if exchanged and "step_total" in ast.unparse(fwd) else UNSURE
    if "ReduceOp.MAX" in text or "all_reduce_max" in names:
        st = _text(step)
        if any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mult) for n in ast.walk(funcs["train_step"])
               if "loss" in ast.unparse(n)) and "scale" in st:
            return "wrong_weighting"
        pads = [_padding(c) for c in calls if _name(c) == "Batch"]
        if "empty" in pads:
            return UNSURE  # an empty batch: right, but the kit driver's row meter raises on it (KIT_NOTES 1)
        return "fixed" if "zero_weight" in pads else UNSURE
    own = _text([funcs["run_epoch"]])
    if any(w in own for w in ("all_reduce", "all_gather", "dist.", "broadcast", "barrier", "Join")):
        return UNSURE
    defaults = {t.target.id: t.value.value for t in classes["TrainConfig"].body
                if isinstance(t, ast.AnnAssign) and isinstance(t.target, ast.Name)
                and isinstance(t.value, ast.Constant)}
    if any(defaults.get(k) != v for k, v in DATA_DEFAULTS.items()):
        return "bug_masked"
    return "bug"
