"""The README's runnable blocks, run as written against a real server; its task table and links.

A fenced block right after ``<!-- runnable: MODES -->`` (MODES: ``mock``, ``docker`` or both) is
run once per mode: shell blocks with bash (``-e -o pipefail``), Python blocks with the checkout's
``.venv`` interpreter, in a scratch directory linking the checkout's ``.venv`` and ``task_repos``,
against a server this module starts in that mode (its address replaces ``localhost:8000``).
``bash scripts/setup.sh EXTRA`` lines are checked (the extra's packages import) rather than run,
so the test never reinstalls the shared ``.venv``; a fresh clone runs them for real.
Docker blocks run only when the engine and the runner image are there. A block that talks to a
model at ``localhost:8001`` gets a scripted OpenAI-compatible server there (every reply submits).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from .conftest import start_server

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
VENV_PYTHON = ROOT / ".venv" / "bin" / "python"
BLOCK = re.compile(r"<!-- runnable: ([a-z ]+) -->\n```(bash|python)\n(.*?)\n```", re.DOTALL)
SETUP = re.compile(r"^bash scripts/setup\.sh ([a-z,]+)(\s+#.*)?$", re.MULTILINE)
# The packages each install extra brings (pyproject.toml [project.optional-dependencies]).
EXTRA_IMPORTS = {"docker": ["docker"], "eval": ["matplotlib", "rich"], "llm": ["openai"],
                 "torch": ["torch", "numpy"], "trl": ["trl", "transformers"], "ray": ["ray"],
                 "dev": ["pytest", "ruff"]}
TASKS_TABLE = re.compile(r"<!-- tasks:begin[^>]*-->\n(.*?)\n<!-- tasks:end -->", re.DOTALL)


@dataclass(frozen=True)
class Block:
    line: int
    lang: str
    modes: tuple[str, ...]
    code: str

    def __str__(self) -> str:
        return f"README.md:{self.line} ({self.lang})"


def runnable_blocks(text: str) -> list[Block]:
    return [Block(text[:m.start()].count("\n") + 1, m.group(2), tuple(m.group(1).split()), m.group(3))
            for m in BLOCK.finditer(text)]


BLOCKS = runnable_blocks(README.read_text())
CASES = [pytest.param(b, mode, id=f"line{b.line}-{b.lang}-{mode}",
                      marks=[pytest.mark.docker] if mode == "docker" else [])
         for b in BLOCKS for mode in b.modes]


def docker_ready() -> str | None:
    """None when docker mode can run here, else why not."""
    try:
        import docker

        from sandbox_env.sandbox.docker import RUNNER_IMAGE

        client = docker.from_env(timeout=5)
        client.ping()
        client.images.get(RUNNER_IMAGE)
    except Exception as exc:
        return f"docker mode cannot run here: {exc.__class__.__name__}: {exc}"
    return None


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, str]]:
    """Started on first use per mode, stopped at the end of the module."""
    procs: dict[str, subprocess.Popen] = {}
    urls: dict[str, str] = {}

    class Lazy(dict):
        def __missing__(self, mode: str) -> str:
            proc, url = start_server(ROOT / "task_repos", mode, "--max-sessions", "16")
            procs[mode], urls[mode] = proc, url
            self[mode] = url
            return url

    yield Lazy()
    for proc in procs.values():
        proc.terminate()
        proc.wait(timeout=60)


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    """A directory that looks like the checkout to the README's commands, writing nowhere in it."""
    for name in (".venv", "task_repos", "examples"):
        (tmp_path / name).symlink_to(ROOT / name)
    return tmp_path


def setup_check(match: re.Match[str]) -> str:
    mods = [m for extra in match.group(1).split(",") for m in EXTRA_IMPORTS[extra]]
    return f".venv/bin/python -c 'import {', '.join(mods)}'"


MODEL = "localhost:8001"  # where the README's "your own model" example expects a model


@pytest.fixture(scope="module")
def model() -> Iterator[str]:
    """An OpenAI-compatible server whose every reply is a submit_fix action."""
    from .test_agent import ScriptedLLM

    llm = ScriptedLLM().start()
    submit = '{"action_type": "submit_fix", "explanation": "the loss tensors kept every graph alive"}'
    llm.load([submit] * 200)
    yield llm.url.removeprefix("http://").removesuffix("/v1")
    llm.stop()


def as_run(block: Block, url: str, model: str | None = None) -> str:
    host = url.removeprefix("http://")
    code = block.code.replace("localhost:8000", host).replace("127.0.0.1:8000", host)
    if model:
        code = code.replace(MODEL, model)
    return SETUP.sub(setup_check, code) if block.lang == "bash" else code


def test_the_readme_has_runnable_blocks() -> None:
    langs = {b.lang for b in BLOCKS}
    assert langs == {"bash", "python"} and len(BLOCKS) >= 4
    for b in BLOCKS:
        assert set(b.modes) <= {"mock", "docker"}, b


@pytest.mark.skipif(not VENV_PYTHON.exists(), reason="no .venv: run `bash scripts/setup.sh` first")
@pytest.mark.parametrize(("block", "mode"), CASES)
def test_runnable_block(block: Block, mode: str, servers: dict[str, str], scratch: Path,
                        request: pytest.FixtureRequest) -> None:
    if mode == "docker" and (why := docker_ready()):
        pytest.skip(why)
    if block.lang == "bash":
        missing = [t for t in ("curl", "jq") if t in block.code and shutil.which(t) is None]
        if missing:
            pytest.skip(f"{', '.join(missing)} not installed")
    code = as_run(block, servers[mode], request.getfixturevalue("model") if MODEL in block.code else None)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SANDBOX_ENV_", "VIRTUAL_ENV"))}
    argv = (["bash", "-e", "-o", "pipefail", "-c", code] if block.lang == "bash"
            else [str(scratch / ".venv" / "bin" / "python"), "-c", code])
    timeout = 900 if mode == "docker" else 300
    p = subprocess.run(argv, cwd=scratch, env=env, capture_output=True, text=True, timeout=timeout,
                       check=False)
    out = p.stdout + p.stderr
    assert p.returncode == 0, f"{block} in {mode} mode exited {p.returncode}:\n{code}\n---\n{out[-4000:]}"
    assert p.stdout.strip(), f"{block} printed nothing:\n{out[-2000:]}"
    assert "Traceback" not in out, out[-4000:]
    if "submit_fix" in block.code:  # the example episode ends with a verified fix
        assert p.stdout.strip().splitlines()[-1].startswith("True"), p.stdout
    if "sandbox-env report" in block.code:
        assert (scratch / "runs" / "cmp" / "report.html").is_file()


def test_the_task_table_is_the_generated_one() -> None:
    """The README's task table is `sandbox-env tasks --markdown` verbatim (regenerate it on a new family)."""
    found = TASKS_TABLE.search(README.read_text())
    assert found, "README.md has no <!-- tasks:begin --> ... <!-- tasks:end --> block"
    p = subprocess.run([str(VENV_PYTHON if VENV_PYTHON.exists() else "python"), "-m", "sandbox_env.cli",
                        "--task-root", str(ROOT / "task_repos"), "tasks", "--markdown"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120, check=True)
    assert found.group(1).strip() == p.stdout.strip(), (
        "README's task table is stale: paste the output of `.venv/bin/sandbox-env tasks --markdown` "
        "between its tasks:begin and tasks:end markers")


def test_relative_links_resolve() -> None:
    text = README.read_text()
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if not re.match(r"[a-z]+://", target):
            assert (ROOT / target).exists(), f"README links to a missing {target}"
    docs = ROOT / "docs"
    for page in docs.glob("*.md"):
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if not re.match(r"[a-z]+://", target):
                assert (page.parent / target).exists(), f"{page.name} links to a missing {target}"


def test_the_readme_is_a_front_door() -> None:
    """Short, and free of work history: no issue numbers, no dated runs."""
    text = README.read_text()
    assert len(text.splitlines()) <= 250
    assert not re.search(r"\bissue\s*#?\d+", text, re.IGNORECASE)
    assert not re.search(r"\b20\d\d-\d\d-\d\d\b", text), "dated measurements belong in docs/"
    assert "the seed" not in text.lower()
