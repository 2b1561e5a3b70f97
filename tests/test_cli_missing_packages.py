"""A command that needs an optional package this environment lacks says so in one line, naming the
install extra and the command that installs it into this environment (never a traceback)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

BLOCK = """
import sys
for name in {hidden!r}:
    sys.modules[name] = None  # as if the package were not installed
from sandbox_env.cli import main
sys.exit(main({argv!r}))
"""


def run_without(hidden: list[str], argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    code = BLOCK.format(hidden=hidden, argv=["--task-root", str(ROOT / "task_repos"), *argv])
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True,
                          timeout=120, check=False)


@pytest.mark.parametrize(("hidden", "argv", "extra"), [
    (["docker"], ["images", "build"], "docker"),
    (["matplotlib"], ["report", "{tmp}"], "eval"),
    (["docker"], ["serve", "--mode", "docker", "--port", "1"], "docker"),
])
def test_missing_optional_package_is_one_line_naming_the_install_command(
        hidden: list[str], argv: list[str], extra: str, tmp_path: Path) -> None:
    p = run_without(hidden, [a.format(tmp=tmp_path) for a in argv], cwd=ROOT)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    assert lines[0].startswith("error: ") and f"install extra '{extra}'" in lines[0]
    assert f"'{hidden[0]}'" in lines[0]
    from sandbox_env.cli.common import CHECKOUT

    if Path(sys.prefix).resolve() == (CHECKOUT / ".venv").resolve():  # run from the checkout's .venv
        assert f"run `bash scripts/setup.sh {extra}`" in lines[0]
    else:  # elsewhere: this interpreter's own pip, never a bare `pip`
        assert f"{sys.executable} -m pip install 'sandbox-env[{extra}]'" in lines[0]


def test_outside_the_checkout_the_setup_script_is_named_by_its_path(tmp_path: Path) -> None:
    from sandbox_env.cli.common import CHECKOUT

    if Path(sys.prefix).resolve() != (CHECKOUT / ".venv").resolve():
        pytest.skip("not running from the checkout's .venv")
    p = run_without(["docker"], ["images", "build"], cwd=tmp_path)
    assert f"run `bash {CHECKOUT / 'scripts' / 'setup.sh'} docker`" in p.stderr


def test_an_unrelated_missing_module_still_raises(tmp_path: Path) -> None:
    """Only the optional packages of an install extra are turned into the one-line message."""
    code = ("import sys\nfrom sandbox_env.cli import main\nimport sandbox_env.cli.episodes as e\n"
            "def boom(args):\n    import no_such_module_here\n"
            "e.cmd_tasks.__code__ = boom.__code__\n"
            f"sys.exit(main(['--task-root', {str(ROOT / 'task_repos')!r}, 'tasks']))")
    p = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                       timeout=120, check=False)
    assert p.returncode != 0 and "ModuleNotFoundError" in p.stderr
