"""The layers of docs/architecture.md, enforced: each module imports only what its layer may.

Imports are read statically (``ast``) from every module of the package, including imports
inside functions (a lazy import is still a dependency). A rule names a layer by module
prefixes, the package layers it may import, and the third-party packages it may import; a
module belongs to the layer of its longest matching prefix.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "sandbox_env"
STDLIB = set(sys.stdlib_module_names) | {"__future__"}


@dataclass(frozen=True)
class Layer:
    name: str
    prefixes: tuple[str, ...]
    may_import: tuple[str, ...]  # other layers (by name); a layer may always import itself
    third_party: tuple[str, ...] = ()
    job: str = ""


LAYERS = [
    Layer("kit", ("kit", "kit.check_runtime", "kit.child_process", "kit.verdict_protocol", "analysis"), (),
          job="runs inside sandboxes and in classifiers: standard library only"),
    Layer("kit-verifier", ("kit.check_kit",), ("kit",), ("torch",),
          job="the shared verifiers a hidden check composes, in the verifier (torch loads trained states)"),
    Layer("kit-driver", ("kit.kit_driver", "kit.tamper_guard"), ("kit",), ("torch",),
          job="the kit's driver children: run agent code under torch inside sandboxes"),
    Layer("domain", ("models", "errors", "actions", "agent_view", "instructions", "workspace", "rubrics",
                     "suite"),
          ("kit",), ("pydantic", "openai"),
          job="what an episode is made of: no execution, no transport"),
    Layer("sandbox", ("sandbox", "runner_env", "images"), ("domain", "kit", "kit-verifier"),
          ("docker", "torch", "ray"),
          job="where commands run; the only layer that starts processes or containers (the reference bank "
              "draws with the check's own check_kit.draw)"),
    Layer("episode", ("environment",), ("domain", "sandbox"),
          job="one episode over a sandbox: workspace, budget, rubric"),
    Layer("client", ("client", "protocol"), ("domain",), ("httpx",),
          job="the episode protocol and its HTTP client"),
    Layer("agent", ("agent",), ("client", "domain"), ("httpx", "openai"),
          job="the baseline LLM agent: talks to episodes only through the protocol"),
    Layer("server", ("server",), ("episode", "sandbox", "domain", "client", "kit"),
          ("fastapi", "starlette", "uvicorn", "anyio", "pydantic", "mcp", "websockets"),
          job="HTTP, /ws and MCP faces over the environment"),
    Layer("trl", ("trl",), ("episode", "sandbox", "domain", "client"), ("httpx",),
          job="the TRL environment_factory adapter"),
    Layer("harnesses", ("harnesses",), ("episode", "sandbox", "domain", "client"),
          ("inspect_ai", "verifiers", "anyio", "httpx"),
          job="adapters for other harnesses (Inspect, verifiers, Harbor export), over the episode protocol"),
    Layer("eval", ("eval",), ("episode", "sandbox", "domain", "client", "agent"),
          ("httpx", "openai", "rich", "matplotlib", "numpy"),
          job="evaluation runs, records, summaries and reports"),
    Layer("tools", ("quality",),
          ("sandbox", "domain", "kit", "episode"), ("docker",), job="operator commands behind the CLI"),
    Layer("cli", ("cli", "__init__", "__main__", "server.asgi"), ("*",), ("uvicorn",),
          job="the command line: may use anything"),
]
THIRD_PARTY_EVERYWHERE = {"pydantic", "typing_extensions"}
# kit modules import their siblings by bare name inside a sandbox
KIT_SIBLINGS = {p.rsplit(".", 1)[-1] for layer in LAYERS if layer.name.startswith("kit")
                for p in layer.prefixes}


def module_name(path: Path, root: Path = PACKAGE) -> str:
    rel = path.relative_to(root).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


def layer_of(module: str) -> Layer:
    best: tuple[int, Layer] | None = None
    for layer in LAYERS:
        for p in layer.prefixes:
            if (module == p or module.startswith(p + ".")) and (best is None or len(p) > best[0]):
                best = (len(p), layer)
    assert best is not None, f"sandbox_env.{module} is in no layer of tests/test_architecture.py"
    return best[1]


def imports_of(path: Path, root: Path = PACKAGE) -> set[str]:
    """Absolute names this module imports (relative imports resolved), inside functions too."""
    module = module_name(path, root)
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)] if node.level > 1 else package
                name = ".".join(["sandbox_env", *base, *([node.module] if node.module else [])])
                if not node.module:  # from . import a, b: a name may be a module
                    pkg_dir = root.joinpath(*name.split(".")[1:])
                    found.update(f"{name}.{a.name}" for a in node.names
                                 if (pkg_dir / a.name).is_dir() or (pkg_dir / f"{a.name}.py").exists())
                found.add(name.rstrip("."))
            elif node.module:
                found.add(node.module)
    return found


def violations(root: Path = PACKAGE) -> list[str]:
    by_name = {layer.name: layer for layer in LAYERS}
    bad: list[str] = []
    for path in sorted(root.rglob("*.py")):
        module = module_name(path, root)
        layer = layer_of(module)
        for name in sorted(imports_of(path, root)):
            top = name.split(".")[0]
            if top == "sandbox_env":
                inner = name.removeprefix("sandbox_env").lstrip(".")
                if not inner or "*" in layer.may_import:
                    continue
                target = layer_of(inner)
                if target.name != layer.name and target.name not in layer.may_import:
                    bad.append(f"{module} ({layer.name}) imports {inner} ({target.name}): "
                               f"{layer.name} may import {', '.join(layer.may_import) or 'nothing else'}")
                continue
            if top in STDLIB or (top in THIRD_PARTY_EVERYWHERE and layer.name != "kit"):
                continue
            if layer.name.startswith("kit") and top in KIT_SIBLINGS:  # siblings by bare name in a sandbox
                continue
            if top not in layer.third_party and "*" not in layer.may_import:
                bad.append(f"{module} ({layer.name}) imports third-party {top!r}: {layer.job}")
    for layer in LAYERS:
        assert all(m in by_name or m == "*" for m in layer.may_import), layer
    return bad


def test_every_import_respects_its_layer() -> None:
    bad = violations()
    assert not bad, "layer rules of docs/architecture.md broken:\n" + "\n".join(bad)


def test_only_the_docker_backend_talks_to_docker() -> None:
    users = sorted(module_name(p) for p in PACKAGE.rglob("*.py")
                   if any(n.split(".")[0] == "docker" for n in imports_of(p)))
    assert all(u.startswith(("sandbox.docker", "quality.doctor", "images")) for u in users), users


def test_only_the_server_speaks_http() -> None:
    users = sorted(module_name(p) for p in PACKAGE.rglob("*.py")
                   if any(n.split(".")[0] in ("fastapi", "starlette") for n in imports_of(p)))
    assert users and all(u.startswith("server") for u in users), users


def test_the_rules_can_fail(tmp_path: Path) -> None:
    """A domain module importing the server, a kit module importing pydantic: both reported."""
    (tmp_path / "models.py").write_text("import fastapi\n\ndef f():\n    from .server import app\n")
    (tmp_path / "kit").mkdir()
    (tmp_path / "kit" / "verdict_protocol.py").write_text("import pydantic\n")
    (tmp_path / "server").mkdir()
    (tmp_path / "server" / "__init__.py").write_text("from ..models import f\n")
    bad = violations(tmp_path)
    assert any("models (domain) imports server (server)" in b for b in bad), bad
    assert any("models (domain) imports third-party 'fastapi'" in b for b in bad), bad
    assert any("kit.verdict_protocol (kit) imports third-party 'pydantic'" in b for b in bad), bad
    assert not any(b.startswith("server") for b in bad), bad
