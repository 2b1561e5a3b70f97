"""Mock classifier (ast only): what the augmentations draw from. The dataset's generator made in
__init__: ``bug``; a new generator, by its seed: worker's torch seed or [seed, epoch, index] ``fixed``,
worker id or index alone ``repeats_every_epoch``, none/clock/entropy ``not_reproducible``; torch's RNG:
``fixed``. Also ``no_workers``, ``tampered``, ``no_result``, special-cased knobs (``bug``); else UNSURE."""

from __future__ import annotations

import ast
from collections import Counter
from functools import lru_cache
from pathlib import Path

from sandbox_env.analysis import UNSURE
from sandbox_env.analysis.environment import classify_everywhere
from sandbox_env.analysis.exits import exits_at_import
from sandbox_env.analysis.tamper import dynamic_code, patches
from sandbox_env.analysis.workspace import live_files, parse, same_code
from sandbox_env.suite.tasks import load_task

HERE = Path(__file__).parent
MAKERS = ("default_rng", "Generator", "RandomState", "SeedSequence", "seed")
TORCH_DRAWS = {"randint", "randn", "rand", "randperm", "uniform_", "normal_", "bernoulli", "multinomial"}
ENTROPY = {"time", "time_ns", "perf_counter", "urandom", "getpid", "SystemRandom", "uuid4"}


task = lru_cache(maxsize=1)(lambda: load_task(HERE))

@lru_cache(maxsize=1)
def original() -> dict[str, str]:
    return {p.name: p.read_text() for p in (HERE / "repo").glob("*.py")}


def classify(files: dict[str, str]) -> str:
    files = live_files(files, task().entry.modules)
    return classify_everywhere(files, task().verify.production_dir, _classify)


def _names(node: ast.AST) -> set[str]:
    return {n.id if isinstance(n, ast.Name) else n.attr for n in ast.walk(node)
            if isinstance(n, (ast.Name, ast.Attribute))}


def seed_kind(call: ast.Call, mod) -> str:
    """What seeds a generator made by ``call`` (names assigned in its module followed)."""
    args = [*call.args, *(k.value for k in call.keywords)]
    if all(isinstance(a, ast.Constant) and a.value is None for a in args):
        return "entropy"
    assigned = [(t.id, a.value) for a in mod.of(ast.Assign) for t in a.targets if isinstance(t, ast.Name)]
    exprs = list(args)
    for e in exprs[:12]:  # follow local names to what they were assigned
        exprs += [v for n, v in assigned if n in _names(e) and v not in exprs]
    names = set().union(*(_names(e) for e in exprs))
    calls = {mod.dotted(c.func).split(".")[-1] for e in exprs for c in ast.walk(e) if isinstance(c, ast.Call)}
    if names & ENTROPY:
        return "entropy"
    if calls - {"get_worker_info", "initial_seed", "SeedSequence", "int", "abs", "default_rng"}:
        return UNSURE  # a seed computed by code this analysis does not follow
    info = {"get_worker_info"} | {n for n, v in assigned if "worker_info" in ast.dump(v)}
    if "initial_seed" in calls or any(isinstance(n, ast.Attribute) and n.attr == "seed"
                                      and _names(n.value) & info for e in exprs for n in ast.walk(e)):
        return "worker"
    if "epoch" in names and names & {"index", "idx", "i", "item"}:
        return "item_epoch"
    if names & {"worker_id", "id", "index", "idx", "item"}:
        return "per_slot"
    return "fixed_seed" if names <= {"cfg", "self", "seed", "np", "random", "numpy"} else UNSURE


def _loader_values(mods, key: str) -> list[ast.expr]:
    return [k.value for m in mods.values() for c in m.of(ast.Call)
            if m.dotted(c.func).endswith("DataLoader") for k in c.keywords if k.arg == key]


def _classify(files: dict[str, str]) -> str:
    mods = parse(files)
    calls = [(m, c) for m in mods.values() for c in m.of(ast.Call)]
    if any(exits_at_import(m) for m in mods.values()):
        return "no_result"
    if [p for p in patches(list(mods.values()), ("torch",)) if "(" not in p.base]:
        return "tampered"
    if dynamic_code(list(mods.values())):
        return UNSURE
    if any(isinstance(v, ast.Constant) and v.value == 0 for v in _loader_values(mods, "num_workers")):
        return "no_workers"
    for raw in _loader_values(mods, "worker_init_fn"):
        value = raw
        while isinstance(value, ast.IfExp):
            test = value.test
            if not isinstance(test, ast.Constant):  # a reseed only for some config values: special-cased
                special = "cfg" in _names(test) and any(isinstance(n, ast.Constant) for n in ast.walk(test))
                return "bug" if special else UNSURE
            value = value.body if test.value else value.orelse
    used = set().union(*(_names(n) for m in mods.values() for n in m.of(ast.Name, ast.Attribute)
                         if isinstance(n.ctx, ast.Load)))
    live = [(m, c) for m in mods.values() for f in m.tree.body for c in ast.walk(f) if isinstance(c, ast.Call)
            and not (isinstance(f, ast.FunctionDef) and f.name not in used)]  # dead helpers aside
    new = Counter((m.path, ast.dump(c)) for m, c in live) - \
        Counter((m.path, ast.dump(c)) for m in parse(original()).values() for c in m.of(ast.Call))
    kinds = {seed_kind(c, m) for m, c in live if m.dotted(c.func).split(".")[-1] in MAKERS
             and (m.path, ast.dump(c)) in new}
    draws = [c for m, c in calls if m.path in ("transforms.py", "datasets.py")
             and m.dotted(c.func).split(".")[-1] in TORCH_DRAWS]
    if any(k.arg == "generator" for c in draws for k in c.keywords):
        return UNSURE  # torch draws from a generator object: where it is seeded is not modelled
    rng_left = any(isinstance(c.func, ast.Attribute) and "rng" in _names(c.func.value)
                   for m, c in calls if m.path == "transforms.py")
    if not kinds and not draws:  # the dataset's own generator, as in the repo
        same = all(same_code(files.get(n, ""), original()[n]) for n in ("datasets.py", "transforms.py"))
        reseed = [v for v in _loader_values(mods, "worker_init_fn")
                  if not (isinstance(v, ast.Constant) and v.value is None)]
        return "bug" if same and not reseed else UNSURE
    if "entropy" in kinds:
        return "not_reproducible"
    if "per_slot" in kinds and "item_epoch" not in kinds:
        return "repeats_every_epoch"
    if kinds == {"item_epoch"}:
        sets = any(isinstance(c.func, ast.Attribute) and c.func.attr == "set_epoch" for m, c in calls) or any(
            isinstance(t, ast.Attribute) and t.attr == "epoch" and _names(t.value) - {"self"}
            for m in mods.values() for a in m.of(ast.Assign) for t in a.targets)
        return "fixed" if sets else "repeats_every_epoch"
    if kinds == {"worker"} or (not kinds and not rng_left):
        return "fixed"
    return "bug" if kinds == {"fixed_seed"} else UNSURE
