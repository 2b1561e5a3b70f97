"""sandbox_env.analysis, module by module, on small code snippets: which files run, world-size
branches, what the code sees of its environment, config draws, exits, tampering, and the
interpreters (grad mode, rank reachability) on toy programs."""

from __future__ import annotations

import ast

from sandbox_env.analysis import UNSURE, Unsure, unsure_if_not_followed
from sandbox_env.analysis.config import choices, defaults, draws, judge, special_cased, taken
from sandbox_env.analysis.environment import classify_everywhere, environments, specialise, worst
from sandbox_env.analysis.exits import exits_at_import, forges_report
from sandbox_env.analysis.grad import Run
from sandbox_env.analysis.ranks import Analysis, rank_runs
from sandbox_env.analysis.tamper import dynamic_code, patches, reaches_driver
from sandbox_env.analysis.workspace import identifiers, live_files, live_nodes, method_call, parse, same_code
from sandbox_env.analysis.world import prune_world_size

ENTRY = ["train", "config", "model"]


# ---------------------------------------------------------------- live files
def test_the_entry_modules_and_what_they_import_run() -> None:
    files = {
        "train.py": "import model\nfrom utils.data import loader\n",
        "model.py": "import torch\nfrom layers import Block\n",
        "layers.py": "X = 1\n",
        "utils/__init__.py": "",
        "utils/data.py": "def loader(): ...\n",
        "backup/train.py": "FIXED = True\n",
        "unused.py": "import train\n",
        "README.md": "notes",
        "data.csv": "1,2\n",
    }
    assert sorted(live_files(files, ENTRY)) == ["README.md", "data.csv", "layers.py", "model.py",
                                                "train.py", "utils/__init__.py", "utils/data.py"]


def test_the_entry_modules_come_from_the_task() -> None:
    files = {"main.py": "import helpers\n", "helpers.py": "", "train.py": "import other\n", "other.py": ""}
    assert sorted(live_files(files, ["main"])) == ["helpers.py", "main.py"]


def test_config_alone_is_an_entry_and_dynamic_imports_count() -> None:
    files = {
        "config.py": "import importlib\nmod = importlib.import_module('plugins')\nh = __import__('hooks')\n",
        "plugins.py": "",
        "hooks.py": "",
        "other.py": "",
    }
    assert sorted(live_files(files, ENTRY)) == ["config.py", "hooks.py", "plugins.py"]


def test_modules_shadowing_the_stdlib_or_torch_never_count() -> None:
    files = {
        "train.py": "import os, resource, torch, numpy\nimport helpers\n",
        "resource.py": "BAD = 1\n",
        "os.py": "BAD = 1\n",
        "torch.py": "BAD = 1\n",
        "numpy/__init__.py": "BAD = 1\n",
        "helpers.py": "",
        "sitecustomize.py": "BAD = 1\n",
    }
    assert sorted(live_files(files, ENTRY)) == ["helpers.py", "train.py"]


def test_a_file_with_a_syntax_error_runs_but_its_imports_are_not_followed() -> None:
    files = {"train.py": "import broken\n", "broken.py": "import deeper\ndef (:\n", "deeper.py": ""}
    assert sorted(live_files(files, ENTRY)) == ["broken.py", "train.py"]


def test_relative_imports_are_not_resolved() -> None:
    files = {"train.py": "from . import helpers\nfrom .lib import x\n", "helpers.py": "", "lib.py": ""}
    assert sorted(live_files(files, ENTRY)) == ["train.py"]


def test_no_entry_module_keeps_only_non_python_files() -> None:
    assert live_files({"main.py": "import x\n", "x.py": "", "notes.txt": "t"}, ENTRY) == {"notes.txt": "t"}


def test_same_code_ignores_comments_layout_docstrings_and_pass() -> None:
    assert same_code('"""doc"""\nx = 1  # one\n', "x = (1)\n")
    assert not same_code("x = 1\n", "x = 2\n")
    # a docstring or a comment replaced by `pass` (a random agent's edit) is the same code
    assert same_code('class A:\n    """doc"""\n    x: int = 1\n', "class A:\n    pass\n    x: int = 1\n")
    assert same_code("def f():\n    pass\n", 'def f():\n    """doc"""\n')
    handled = "try:\n    f()\nexcept E:\n    g()\n"
    assert same_code(handled + "else:\n    pass\n", handled)
    assert not same_code("try:\n    f()\nexcept E:\n    pass\n", "try:\n    f()\nexcept E:\n    g()\n")


# ---------------------------------------------------------------- world size
def _pruned(src: str) -> str:
    return prune_world_size({"train.py": src})["train.py"]


def _same(a: str, b: str) -> bool:
    return ast.dump(ast.parse(a)) == ast.dump(ast.parse(b))


def test_live_nodes_skip_the_bodies_of_tests_folded_to_false() -> None:
    """What environment.specialise folded to a false constant cannot run; its else branch can."""
    tree = ast.parse("if False and x:\n    dead = 1\nelse:\n    alive = 2\nif y:\n    maybe = 3\n")
    names = {n.id for n in live_nodes(tree) if isinstance(n, ast.Name)}
    assert {"alive", "maybe", "y"} <= names and "dead" not in names


def test_branches_on_more_than_one_rank_are_taken() -> None:
    src = "if world_size > 1:\n    a()\nelse:\n    b()\n"
    assert _same(_pruned(src), "a()")
    assert _same(_pruned("if dist.get_world_size() == 1:\n    a()\nelse:\n    b()\n"), "b()")
    assert _same(_pruned("if self.world_size >= 2:\n    a()\n"), "a()")
    assert _same(_pruned("if cfg.world_size < 2:\n    a()\n"), "pass")
    assert _same(_pruned("if 1 != world_size:\n    a()\n"), "a()")


def test_torchrun_variables_are_unset_in_the_checks_run() -> None:
    env_int = "if int(os.environ.get('WORLD_SIZE', '1')) > 1:\n    a()\nelse:\n    b()\n"
    assert _same(_pruned(env_int), "b()")
    assert _same(_pruned("if int(os.getenv('WORLD_SIZE', '4')) > 1:\n    a()\nelse:\n    b()\n"), "a()")
    assert _same(_pruned("if os.environ.get('WORLD_SIZE'):\n    a()\nelse:\n    b()\n"), "b()")


def test_boolean_combinations_and_conditional_expressions() -> None:
    assert _same(_pruned("if not world_size > 1:\n    a()\nelse:\n    b()\n"), "b()")
    assert _same(_pruned("if world_size > 1 and ready:\n    a()\nelse:\n    b()\n"),
                 "if world_size > 1 and ready:\n    a()\nelse:\n    b()\n")  # undecided: kept
    assert _same(_pruned("if world_size == 1 and ready:\n    a()\nelse:\n    b()\n"), "b()")
    assert _same(_pruned("if world_size > 1 or ready:\n    a()\nelse:\n    b()\n"), "a()")
    assert _same(_pruned("x = ddp(m) if world_size > 1 else m\n"), "x = ddp(m)")
    nested = "def f():\n    if world_size > 1:\n        if rank == 0:\n            a()\n"
    assert _same(_pruned(nested), "def f():\n    if rank == 0:\n        a()\n")


def test_what_does_not_mention_the_world_size_is_left_verbatim() -> None:
    src = "# a comment\nif rank == 0:  # kept as written\n    a()\n"
    files = {"train.py": src, "broken.py": "if world_size > 1:\n  def (:\n", "notes.md": "world_size > 1"}
    assert prune_world_size(files) == files
    assert _same(_pruned("if world_size > n:\n    a()\n"), "if world_size > n:\n    a()\n")


# ---------------------------------------------------------------- environments
ENVS = environments("/srv/jobs/x")
PROBE = """import os, sys
from pathlib import Path
PROD = os.getcwd().startswith("/srv/")
HERE = Path(__file__).resolve().parent
def f():
    if PROD:
        a()
    if "/workspace" in str(HERE):
        b()
    if os.environ.get("CI") or "pytest" in sys.modules or os.getenv("PYTEST_CURRENT_TEST"):
        c()
    data = os.path.join(os.getcwd(), "data")
"""


def test_every_verification_runs_from_the_workspace_and_from_production() -> None:
    assert [e.root for e in ENVS] == ["/workspace", "/srv/jobs/x"]
    assert [e.root for e in environments(None)] == ["/workspace"]


def test_reads_of_the_place_the_code_runs_fold_to_each_environments_constant() -> None:
    (ws, un_ws), (prod, un_prod) = (specialise({"train.py": PROBE}, e) for e in ENVS)
    assert not un_ws and not un_prod
    assert "if False:\n        a()" in ws["train.py"] and "if True:\n        a()" in prod["train.py"]
    assert "if True:\n        b()" in ws["train.py"] and "if False:\n        b()" in prod["train.py"]
    assert "if None:\n        c()" in ws["train.py"] and "if None:\n        c()" in prod["train.py"]
    assert "'/srv/jobs/x/data'" in prod["train.py"]


def test_reads_that_decide_a_test_but_cannot_be_resolved_are_reported() -> None:
    src = ("import os, socket, sys\nif socket.gethostname() == 'ci':\n    a()\n"
           "if 'driver' in sys.argv[0]:\n    b()\nif os.environ.get('FAST'):\n    c()\n"
           "os.environ['CI'] = '1'\nif os.environ.get('CI'):\n    d()\n")
    out, unresolved = specialise({"train.py": src}, ENVS[0])
    assert len(unresolved) == 3 and "if False:\n    a()" in out["train.py"]  # the hostname is known
    assert all("argv" in u or "FAST" in u or "CI" in u for u in unresolved)  # CI: the code sets it
    assert specialise({"train.py": "import os\npath = os.environ.get('DATA', '.')\n"}, ENVS[0])[1] == []
    updated = "import os\nos.environ.update(flags)\nif os.environ.get('CI'):\n    a()\n"
    assert len(specialise({"train.py": updated}, ENVS[0])[1]) == 1  # what the code may have set is unknown


def test_the_sandbox_facts_every_run_shares() -> None:
    src = ("import os, socket\ndef under_test():\n"
           "    return (any(k in os.environ for k in ('CI', 'SANDBOX_UID'))\n"
           "            or socket.gethostname() != 'localhost' or os.getuid() == 0)\n")
    for env in ENVS:
        out, unresolved = specialise({"train.py": src}, env)
        assert "return False" in out["train.py"] and not unresolved


def test_the_worst_environment_decides() -> None:
    assert worst(["fixed", "bug"]) == "bug" and worst(["fixed", UNSURE]) == UNSURE
    assert worst(["fixed", "fixed"]) == "fixed" and worst([UNSURE, "wrong_metrics"]) == "wrong_metrics"
    fix_outside_production = {"train.py": "import os\nFIXED = not os.getcwd().startswith('/srv')\n"}
    label = classify_everywhere(fix_outside_production, "/srv/jobs/x",
                                lambda f: "fixed" if "FIXED = True" in f["train.py"] else "bug")
    assert label == "bug"
    host = {"train.py": "import sys\nif sys.argv[0].endswith('driver.py'):\n    pass\n"}
    assert classify_everywhere(host, "/srv/jobs/x", lambda f: "fixed") == UNSURE
    assert classify_everywhere(host, "/srv/jobs/x", lambda f: "bug") == "bug"


# ---------------------------------------------------------------- config draws
def test_fields_tested_against_constants_are_special_cased() -> None:
    src = ("if cfg.lr == 0.1 or cfg.steps in (3, 4):\n    a()\nif peak > cfg.limit:\n    b()\n"
           "if abs(cfg.width - 8) < 1e-6:\n    c()\nif self.flag:\n    d()\n")
    mods = list(parse({"m.py": src}).values())
    names = {"lr", "steps", "limit", "width", "flag", "seed"}
    assert special_cased(mods, names) == {"lr", "steps", "width", "flag"}
    via_an_object = list(parse({"m.py": "if loader.batch_size == 16384:\n    a()\n"}).values())
    assert special_cased(via_an_object, {"eval_batch_size", "lr"}) == {"eval_batch_size"}


def test_draws_vary_special_cased_fields_only() -> None:
    options = choices({"lr": [0.1, 0.2], "width": [8, 16], "seed": list(range(30))}, {"lr": 0.1, "depth": 2})
    assert options["depth"] == [2] and options["lr"] == [0.1, 0.2]
    runs = draws(options, {"lr"}, {"width": 4})
    assert runs == [{"lr": 0.1, "width": 4, "seed": 0, "depth": 2},
                    {"lr": 0.2, "width": 4, "seed": 0, "depth": 2}]
    assert draws(options, {"seed", "lr"}) is None  # too many combinations


def test_judging_over_draws_finds_the_draw_that_misbehaves() -> None:
    options = {"lr": [0.1, 0.2], "seed": list(range(30))}
    assert judge(options, {"lr"}, lambda d: "fixed" if d["lr"] == 0.1 else "bug") == "bug"
    assert judge(options, {"lr"}, lambda d: "fixed") == "fixed"
    # too many combinations: one field at a time finds a failing draw, but never establishes a pass
    assert judge(options, {"lr", "seed"}, lambda d: "bug" if d["seed"] == 7 else "fixed") == "bug"
    assert judge(options, {"lr", "seed"}, lambda d: "fixed") == UNSURE



def test_a_function_as_it_runs_under_one_draw() -> None:
    fn = ast.parse("def step(cfg, x):\n"
                   "    if cfg.accum_steps > 1 and not cfg.debug:\n        x = x / cfg.accum_steps\n"
                   "    else:\n        x = x * 2\n"
                   "    y = x if cfg.mode == 'sum' else x.mean()\n"
                   "    if x.numel() > 3:\n        return y\n        print('after a return')\n"
                   "    return y\n    z = 1\n").body[0]
    got = ast.unparse(taken(fn, {"accum_steps": 4, "debug": False, "mode": "mean"}))
    assert got == ("def step(cfg, x):\n    x = x / cfg.accum_steps\n    y = x.mean()\n"
                   "    if x.numel() > 3:\n        return y\n    return y")  # data tests stay
    assert "x = x * 2" in ast.unparse(taken(fn, {"accum_steps": 1, "debug": False}))
    unknown = ast.unparse(taken(fn, {}))  # fields the draw does not fix: both sides stay
    assert "x / cfg.accum_steps" in unknown and "x * 2" in unknown
    assert "def step" in ast.unparse(fn) and "print" in ast.unparse(fn)  # the original is left alone


def test_config_defaults_as_the_workspace_writes_them() -> None:
    mods = parse({"config.py": "from dataclasses import dataclass\n@dataclass\nclass TrainConfig:\n"
                               "    lr: float = 0.1\n    name: str = 'run'\n    amp: bool = False\n"
                               "    sizes: tuple = (1, 2)\n    steps: int = 2 * 8\n"})
    assert defaults(mods, "config:TrainConfig") == {"lr": 0.1, "name": "run", "amp": False}
    assert defaults(mods, "settings:TrainConfig") == {}


def test_names_and_method_calls_of_an_expression() -> None:
    e = ast.parse("(batch.labels != IGNORE).sum() + loss.item()", mode="eval").body
    assert identifiers(e) == {"batch", "labels", "IGNORE", "sum", "loss", "item"}
    assert method_call(e.right, "item") and not method_call(e.right, "sum") and not method_call(e, "item")


def test_a_step_the_analysis_cannot_follow_answers_unsure() -> None:
    @unsure_if_not_followed
    def label(kind: str) -> str:
        if kind == "raise":
            raise Unsure("not modelled")
        return {"ok": "fixed"}[kind]  # KeyError on anything else

    assert label("ok") == "fixed"
    assert label("raise") == UNSURE and label("other") == UNSURE
    assert label.__name__ == "label"

# ---------------------------------------------------------------- exits, tampering
def _mods(src: str) -> list:
    return list(parse({"train.py": src}).values())


def test_exits_at_import_outside_the_main_guard() -> None:
    assert exits_at_import(_mods("import sys\nif True:\n    sys.exit(0)\n")[0])
    assert exits_at_import(_mods("raise SystemExit(1)\n")[0])
    assert not exits_at_import(_mods("import sys\ndef f():\n    sys.exit(0)\nif __name__ == '__main__':\n"
                                     "    sys.exit(f())\n")[0])
    assert not exits_at_import(_mods("import os\ntry:\n    x = 1\nexcept Exception:\n    os._exit(1)\n")[0])
    assert exits_at_import(_mods("import os\nif __name__ != '__main__':\n    os._exit(0)\n")[0])  # on import


def test_a_report_written_at_import_before_leaving_is_a_forgery() -> None:
    forged = ("import json, os\ndef answer():\n    with open('/out/rank0.json', 'w') as fh:\n"
              "        json.dump({}, fh)\n    os._exit(0)\nif __name__ != '__main__':\n    answer()\n")
    assert forges_report(_mods(forged))
    assert not forges_report(_mods(forged.replace("!=", "==")))  # only under python train.py
    assert not forges_report(_mods(forged.replace("    os._exit(0)\n", "")))  # writes, then trains
    assert reaches_driver(_mods("import gc\nfor o in gc.get_objects():\n    pass\n"))
    assert reaches_driver(_mods("import sys\nsys._getframe(1).f_locals['x'] = 1\n"))
    assert not reaches_driver(_mods("import gc\ngc.collect()\n"))


def test_runtime_patches_of_torch_through_any_alias() -> None:
    src = ("import torch\nimport torch.distributed as dist\nimport torch.nn.functional as F\n"
           "import unittest.mock\ndef mine(*a):\n    pass\ndist.all_reduce = mine\n"
           "setattr(torch.Tensor, 'item', 0.0)\nF.gelu = lambda x: x\n"
           "torch.backends.cudnn.deterministic = True\nunittest.mock.patch('torch.save')\n"
           "model.forward = mine\n")
    found = {(p.base, p.attr, p.value) for p in patches(_mods(src), any_base=("forward",))}
    assert found == {("torch.distributed", "all_reduce", "function"), ("torch.Tensor", "item", "setattr"),
                     ("torch.nn.functional", "gelu", "lambda"), ("torch", "save", "patch"),
                     ("torch.backends.cudnn", "deterministic", "constant"), ("model", "forward", "function")}
    aliased = ("import torch\nT = torch.Tensor\nT.item = lambda s: 0.0\n"
               "getattr(torch, 'nn').Module.__call__ = f\nx = torch.zeros(3)\nx.requires_grad = True\n")
    found = {(p.base, p.attr) for p in patches(_mods(aliased))}
    assert found == {("T", "item"), ("getattr(torch, 'nn').Module", "__call__")}
    assert dynamic_code(_mods("exec('x = 1')\n"))
    assert dynamic_code(_mods("import sys\nsys.modules['x'] = 1\n"))
    assert not dynamic_code(_mods("import os\n"))


# ---------------------------------------------------------------- interpreters
FIT = """import torch
from dataclasses import dataclass
@dataclass
class Config:
    epochs: int = 1
class Net(torch.nn.Module):
    def forward(self, x):
        return x
class Loader:
    def __iter__(self):
        return iter([])
def fit(cfg):
    model, total = Net(), 0.0
    model.eval()
    for x, y in Loader():
        total += LOSS
    return total
"""


def test_autograd_recording_decides_whether_a_loop_keeps_graphs() -> None:
    def leaks(loss: str) -> list:
        run = Run({"config.py": FIT, "train.py": FIT.replace("LOSS", loss)})
        run.run(("train", "fit"), ("config", "Config"), {})
        return run.leaks
    assert leaks("model(x)")
    assert not leaks("model(x).item()")
    assert not leaks("float(model(x))")
    loop = "    for x, y in Loader():\n        total += LOSS"
    with_no_grad = FIT.replace(loop, "    with torch.no_grad():\n        for x, y in Loader():\n"
                                     "            total += model(x)")
    run = Run({"config.py": FIT, "train.py": with_no_grad})
    run.run(("train", "fit"), ("config", "Config"), {})
    assert not run.leaks and {f[0] for f in run.forwards} == {"eval"}


def test_a_comprehension_over_some_batches_is_truncated_or_doubted() -> None:
    """A batch comprehension over islice(loader, n) evaluates only some batches, as a loop with a
    break does; a filtered one evaluates the batches its condition keeps (unknown: a doubt)."""
    def run_of(expr: str) -> Run:
        body = FIT.replace("    for x, y in Loader():\n        total += LOSS",
                           f"    with torch.no_grad():\n        losses = {expr}")
        run = Run({"config.py": FIT, "train.py": "from itertools import islice\n" + body})
        run.run(("train", "fit"), ("config", "Config"), {})
        return run
    whole = run_of("[model(x) for x, y in Loader()]")
    assert not whole.doubts and not any("truncated" in lp.stops for lp in whole.loops if lp.batch)
    some = run_of("[model(x) for x, y in islice(Loader(), 3)]")
    assert any("truncated" in lp.stops for lp in some.loops if lp.batch and "eval" in lp.kinds)
    assert run_of("[model(x) for x, y in Loader() if x.sum() > 0]").doubts


def test_collectives_reached_by_one_rank_only_show_as_a_difference() -> None:
    src = ("import torch.distributed as dist\ndef train(cfg, rank):\n    t = 0\n    if rank == 0:\n"
           "        dist.all_reduce(t)\n    dist.barrier()\n")
    an = Analysis({"train.py": src}, record_key="loss", count_key="n")
    train = an.modules["train"]
    [(r0, r1)] = rank_runs(an, train, an.funcs[("f", "train")][0][0])
    assert r0.seq == ["all_reduce", "barrier"] and r1.seq == ["barrier"]
    even = src.replace("    if rank == 0:\n        dist.all_reduce(t)\n", "    dist.all_reduce(t)\n")
    an = Analysis({"train.py": even}, record_key="loss", count_key="n")
    [(r0, r1)] = rank_runs(an, an.modules["train"], an.funcs[("f", "train")][0][0])
    assert r0.seq == r1.seq == ["all_reduce", "barrier"]


# ---------------------------------------------------------------- folding
def test_constant_folding_of_operators_and_comparison_chains() -> None:
    from sandbox_env.analysis import folding

    assert folding.binary(ast.Mod(), 7, 3) == 1 and folding.binary(ast.Pow(), 2, 10) == 1024
    assert folding.binary(ast.Div(), 1, 0) is folding.NO_VALUE
    assert folding.binary(ast.Pow(), 10, 10**9) is folding.NO_VALUE  # not folded: too large
    assert folding.unary(ast.Not(), 0) is True and folding.unary(ast.USub(), "x") is folding.NO_VALUE
    assert folding.compare([ast.Lt(), ast.LtE()], [1, 2, 2]) is True
    assert folding.compare([ast.In()], ["a", ("a", "b")]) is True
    assert folding.compare([ast.Lt()], [1, "a"]) is folding.NO_VALUE


# ---------------------------------------------------------------- calls
def test_arguments_bind_as_python_binds_them() -> None:
    import pytest

    from sandbox_env.analysis import Unsure
    from sandbox_env.analysis.calls import bind

    fn = ast.parse("def f(self, a, b=2, *rest, c, d=4, **kw): pass").body[0]
    env = bind(fn, [1], {"c": 3}, lambda d: d.value * 10, extra="*", skip={"self"})
    assert env == {"a": 1, "b": 20, "c": 3, "d": 40, "rest": "*", "kw": "*"}
    strict = ast.parse("def g(a, b): pass").body[0]
    assert bind(strict, [1], {}, lambda d: d) == {"a": 1}  # b: left unbound
    with pytest.raises(Unsure):
        bind(strict, [1, 2, 3], {}, lambda d: d)
    with pytest.raises(Unsure):
        bind(strict, [1], {"z": 2}, lambda d: d)
