"""sandbox_env.mock_analysis: which workspace files run, and how a 2-rank run resolves
world-size branches, on small code snippets."""

from __future__ import annotations

import ast

from sandbox_env.mock_analysis import live_files, prune_world_size


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
    assert sorted(live_files(files)) == ["README.md", "data.csv", "layers.py", "model.py", "train.py",
                                         "utils/__init__.py", "utils/data.py"]


def test_config_alone_is_an_entry_and_dynamic_imports_count() -> None:
    files = {
        "config.py": "import importlib\nmod = importlib.import_module('plugins')\nh = __import__('hooks')\n",
        "plugins.py": "",
        "hooks.py": "",
        "other.py": "",
    }
    assert sorted(live_files(files)) == ["config.py", "hooks.py", "plugins.py"]


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
    assert sorted(live_files(files)) == ["helpers.py", "train.py"]


def test_a_file_with_a_syntax_error_runs_but_its_imports_are_not_followed() -> None:
    files = {"train.py": "import broken\n", "broken.py": "import deeper\ndef (:\n", "deeper.py": ""}
    assert sorted(live_files(files)) == ["broken.py", "train.py"]


def test_relative_imports_are_not_resolved() -> None:
    files = {"train.py": "from . import helpers\nfrom .lib import x\n", "helpers.py": "", "lib.py": ""}
    assert sorted(live_files(files)) == ["train.py"]


def test_no_entry_module_keeps_only_non_python_files() -> None:
    assert live_files({"main.py": "import x\n", "x.py": "", "notes.txt": "t"}) == {"notes.txt": "t"}


# ---------------------------------------------------------------- world size
def _pruned(src: str) -> str:
    return prune_world_size({"train.py": src})["train.py"]


def _same(a: str, b: str) -> bool:
    return ast.dump(ast.parse(a)) == ast.dump(ast.parse(b))


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
