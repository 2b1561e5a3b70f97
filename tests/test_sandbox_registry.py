"""The backend registry: modes by name, every list of modes derived from it, auto's walk of the tiers."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import TypeAdapter

from sandbox_env import cli
from sandbox_env.models import Mode
from sandbox_env.quality import doctor
from sandbox_env.sandbox import registry
from sandbox_env.sandbox.base import Sandbox, SandboxUnavailable
from sandbox_env.sandbox.local import LocalSandbox
from sandbox_env.sandbox.mock import MockSandbox


class _Fake(MockSandbox):
    """A backend double: replays like mock, remembers how it was created."""

    mode = "fake"
    made: ClassVar[list[str | None]] = []

    @classmethod
    def create(cls, *, owner: str | None = None) -> _Fake:
        cls.made.append(owner)
        return cls()


class _Down(MockSandbox):
    mode = "down"

    @classmethod
    def available(cls) -> tuple[bool, str]:
        return False, "engine on strike"

    @classmethod
    def create(cls, *, owner: str | None = None) -> _Down:
        raise SandboxUnavailable("engine on strike")


@pytest.fixture
def table(monkeypatch: pytest.MonkeyPatch) -> dict[str, registry.Backend]:
    """An isolated registry table (the built-ins stay untouched)."""
    backends: dict[str, registry.Backend] = {}
    monkeypatch.setattr(registry, "_BACKENDS", backends)
    _Fake.made = []
    return backends


def _add(name: str, cls: type, **kw: Any) -> registry.Backend:
    return registry.register(registry.Backend(name, f"{__name__}:{cls.__name__}", summary=name, **kw))


def test_builtin_modes_and_every_list_derived_from_them() -> None:
    assert registry.modes() == ("mock", "docker", "process", "local", "ray")
    # the domain layer carries a registered backend's name as a string (it must not import the
    # sandbox layer): an observation in any registered mode validates
    for mode in registry.modes():
        assert TypeAdapter(Mode).validate_python(mode) == mode
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    choices = {name: next(a.choices for a in p._actions if a.dest == "mode")
               for name, p in sub.choices.items() if any(a.dest == "mode" for a in p._actions)}
    assert tuple(choices["serve"]) == ("mock", "docker", "process", "local", "ray", "auto")
    assert set(choices["record"]) == set(choices["certify"]) == {"docker", "process", "local"}  # real ones
    assert set(choices["eval"]) == {"mock", "docker", "process", "ray", "auto"}  # safe for untrusted agents
    assert [b.name for b in registry.tiers()] == ["docker", "process", "mock"]


def test_builtin_backends_implement_the_protocols() -> None:
    for mode in registry.modes():
        cls = registry.backend(mode).load()
        assert cls.mode == mode
        for name in ("available", "create", "cleanup", "run", "verify", "provenance", "close"):
            assert callable(getattr(cls, name)), (mode, name)
    for sbx in (MockSandbox.create(), LocalSandbox.create()):
        assert isinstance(sbx, Sandbox) and isinstance(sbx.provenance(), dict)
        assert type(sbx).cleanup() == 0
        sbx.close()


def test_a_registered_backend_is_served_by_name(table: dict[str, registry.Backend]) -> None:
    _add("fake", _Fake)
    assert registry.modes() == ("fake",) and registry.mode_choices() == ("fake", "auto")
    sbx = registry.make_sandbox("fake", owner="me")
    assert isinstance(sbx, _Fake) and _Fake.made == ["me"]
    with pytest.raises(ValueError, match="already registered"):
        _add("fake", _Fake)
    with pytest.raises(ValueError, match="already registered"):
        _add("auto", _Fake)
    with pytest.raises(ValueError, match=r"unknown mode 'nope'; choose from fake, auto"):
        registry.make_sandbox("nope")
    assert registry.find("nope") is None
    registry.unregister("fake")
    assert registry.modes() == ()


def test_a_backend_asked_for_by_name_says_why_it_cannot_work(table: dict[str, registry.Backend]) -> None:
    _add("down", _Down)
    registry.register(registry.Backend("ghost", "sandbox_env.sandbox.no_such_module:Ghost", summary="-"))
    with pytest.raises(SandboxUnavailable, match="down mode requested but engine on strike"):
        registry.make_sandbox("down")
    with pytest.raises(SandboxUnavailable, match="ghost mode requested but it is not available"):
        registry.make_sandbox("ghost")
    assert registry.backend("down").available() == (False, "engine on strike")
    ok, why = registry.backend("ghost").available()
    assert not ok and "not available in this build" in why


def test_auto_walks_the_tiers_and_says_which_and_why(table: dict[str, registry.Backend]) -> None:
    _add("fake", _Fake, tier=5)
    _add("down", _Down, tier=1)
    _add("never", _Down)  # no tier: auto never tries it
    said: list[str] = []
    sbx = registry.make_sandbox("auto", owner="o", say=said.append)
    assert isinstance(sbx, _Fake) and _Fake.made == ["o"]
    assert said == ["auto mode: using fake (down: engine on strike)"]
    registry.unregister("fake")
    with pytest.raises(SandboxUnavailable, match="no tier can work here: down: engine on strike"):
        registry.make_sandbox("auto", say=said.append)


def test_auto_logs_its_choice_by_default(table: dict[str, registry.Backend],
                                         caplog: pytest.LogCaptureFixture) -> None:
    _add("down", _Down, tier=0)
    _add("fake", _Fake, tier=1)
    with caplog.at_level("INFO", logger=registry.__name__):
        registry.make_sandbox("auto")
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("WARNING", "auto mode: using fake (down: engine on strike)")]


def test_doctor_lists_every_registered_mode(table: dict[str, registry.Backend]) -> None:
    _add("down", _Down, tier=0)
    _add("fake", _Fake, tier=1)
    lines = doctor.backend_lines()
    assert lines[0] == "[--] mode down: engine on strike"
    assert lines[1].startswith("[ok] mode fake: ")
    assert lines[2] == "[ok] mode auto: tries down -> fake; the first available here is fake"


def test_health_says_why_the_backend_serves(toy_root: Path) -> None:
    """auto mode's choice and its reasons reach GET /health (and the log)."""
    from fastapi.testclient import TestClient

    from sandbox_env.server import create_app
    from sandbox_env.suite.tasks import TaskRegistry as Registry

    said: list[str] = []
    auto = registry.make_sandbox("auto", say=said.append)
    named = registry.make_sandbox("mock")
    assert said and said[0].startswith("auto mode: using ")
    assert registry.selection(auto) == said[0] and registry.selection(named) == "mock: asked for by name"
    with TestClient(create_app(Registry(toy_root), named)) as client:
        assert client.get("/health").json()["mode_reason"] == "mock: asked for by name"
    auto.close()


def test_default_capacity_follows_the_mode(toy_root: Path) -> None:
    """Unless told, a mock server admits a thousand live episodes, a real one a few dozen; a
    number given always wins. Blocking work stays bounded by its own pool either way."""
    from fastapi.testclient import TestClient

    from sandbox_env.server import ServerConfig, create_app
    from sandbox_env.server.app import MAX_THREADS, default_max_sessions
    from sandbox_env.suite.tasks import TaskRegistry as Registry

    mock = registry.make_sandbox("mock")
    with TestClient(create_app(Registry(toy_root), mock)) as client:
        assert client.get("/health").json()["max_sessions"] == default_max_sessions("mock") == 1024
    with TestClient(create_app(Registry(toy_root), mock, ServerConfig(max_sessions=3))) as client:
        assert client.get("/health").json()["max_sessions"] == 3
    assert default_max_sessions("docker") == default_max_sessions("process") == 64 == MAX_THREADS
