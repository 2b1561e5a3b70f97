"""The fast path of POST /reset and /step (server/fast.py) answers exactly as FastAPI's routes do:
the same statuses, headers and bytes for valid and invalid requests, limits and crashes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from sandbox_env.models import Limits, RunResult
from sandbox_env.sandbox.mock import MockSandbox
from sandbox_env.server import ServerConfig, create_app
from sandbox_env.suite.tasks import TaskRegistry, TaskSpec
from sandbox_env.workspace import Workspace

LIMIT = 4096
Request = tuple[str, str, Any, dict[str, str]]  # method, path, body (bytes or JSON), headers


def _requests() -> list[Request]:
    read = {"action_type": "read_file", "filename": "stats.py"}
    return [
        ("POST", "/reset", {"task": "toy_mean", "episode_id": "a"}, {}),
        ("POST", "/reset", {"task": "toy_mean", "episode_id": "b", "compact": True}, {}),
        ("POST", "/reset", b"{", {}),
        ("POST", "/reset", b"[1]", {}),
        ("POST", "/reset", {"seed": True}, {}),
        ("POST", "/reset", {"task": "nope"}, {}),
        ("POST", "/reset", {"bogus": 1}, {}),
        ("POST", "/reset", {"episode_id": ""}, {}),
        ("POST", "/step", {"action": read, "episode_id": "a"}, {}),
        ("POST", "/step", {**read, "episode_id": "b"}, {}),
        ("POST", "/step", {"action": read}, {"x-episode-id": "a"}),
        ("POST", "/step", {"action": read}, {"x-episode-id": "x" * 129}),
        ("POST", "/step", {"action": read, "episode_id": 5}, {}),
        ("POST", "/step", {"action": read, "episode_id": "nobody"}, {}),
        ("POST", "/step", {"action": read}, {}),  # two live episodes: which one?
        ("POST", "/step", {"action": {"filename": "x"}, "episode_id": "a"}, {}),
        ("POST", "/step", {"action": {"action_type": "read_file"}, "episode_id": "a"}, {}),
        ("POST", "/step", {"action": {"action_type": "fly"}, "episode_id": "a"}, {}),
        ("POST", "/step", b"not json", {}),
        ("POST", "/step", b"", {}),
        ("POST", "/step", b"\xff\xfe", {}),
        ("POST", "/step", b"x" * (LIMIT + 1), {}),
        ("POST", "/step", {"action": {"action_type": "edit_file", "filename": "stats.py",
                                      "old_str": "len(values) - 1", "new_str": "len(values)"},
                           "episode_id": "a"}, {}),
        ("POST", "/step", {"action": {"action_type": "edit_file", "filename": "stats.py",
                                      "old_str": "return", "new_str": "return ("}, "episode_id": "b"}, {}),
        ("POST", "/step", {"action": {"action_type": "execute_bash", "command": "python report.py"},
                           "episode_id": "a"}, {}),
        ("POST", "/step", {"action": {"action_type": "execute_bash", "command": "ls"},
                           "episode_id": "b"}, {}),
        ("POST", "/step", {"action": {"action_type": "view_git_diff"}, "episode_id": "a"}, {}),
        ("POST", "/step", {"action": {"action_type": "submit_fix", "explanation": "The mean divided by "
                                      "len(values) - 1, an off-by-one; dividing by the count fixes it."},
                           "episode_id": "a"}, {}),
        ("POST", "/step", {"action": read, "episode_id": "a"}, {}),  # done
        ("POST", "/step/", {"action": read, "episode_id": "b"}, {}),  # not a fast route
        ("GET", "/step", None, {}),
        ("PUT", "/reset", None, {}),
    ]


def _send(client: TestClient, req: Request) -> tuple[int, dict[str, str], bytes]:
    method, path, body, headers = req
    content = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    r = client.request(method, path, content=content, headers=headers, follow_redirects=False)
    keep = {k: v for k, v in r.headers.items() if k in ("content-type", "content-length", "location")}
    return r.status_code, keep, r.content


@pytest.fixture
def clients(toy_tasks: TaskRegistry) -> Iterator[tuple[TestClient, TestClient]]:
    cfg = ServerConfig(max_body_bytes=LIMIT)
    fast = create_app(toy_tasks, MockSandbox(), cfg)
    slow = create_app(toy_tasks, MockSandbox(), cfg, fast=False)
    assert fast.fast is not None and slow.fast is None
    with TestClient(fast) as a, TestClient(slow) as b:
        yield a, b


def test_fast_routes_answer_exactly_as_the_framework_routes(clients: tuple[TestClient, TestClient]) -> None:
    fast, slow = clients
    for req in _requests():
        assert _send(fast, req) == _send(slow, req), req


def test_fast_routes_refuse_a_chunked_body_over_the_limit(clients: tuple[TestClient, TestClient]) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"action": {"action_type": "read_file", "filename": "'
        yield b"x" * LIMIT
        yield b'"}}'

    answers = [c.post("/step", content=chunks()) for c in clients]
    assert [a.status_code for a in answers] == [413, 413]
    assert answers[0].content == answers[1].content
    assert answers[0].json()["code"] == "PAYLOAD_TOO_LARGE"


class _Broken(MockSandbox):
    def run(self, workspace: Workspace, command: str, limits: Limits, task: TaskSpec) -> RunResult:
        raise RuntimeError("a bug in a sandbox")


def test_fast_routes_answer_an_unexpected_error_as_starlette_does(toy_tasks: TaskRegistry) -> None:
    apps = [create_app(toy_tasks, _Broken(), fast=f) for f in (True, False)]
    answers = []
    for app in apps:
        with TestClient(app, raise_server_exceptions=False) as c:
            c.post("/reset", json={"task": "toy_mean", "episode_id": "a"})
            run = {"action_type": "execute_bash", "command": "python report.py"}
            r = c.post("/step", json={"action": run, "episode_id": "a"})
            answers.append((r.status_code, r.headers["content-type"], r.content))
    assert answers[0] == answers[1] == (500, "text/plain; charset=utf-8", b"Internal Server Error")


def test_middleware_added_later_sees_the_fast_routes_too(toy_tasks: TaskRegistry) -> None:
    app = create_app(toy_tasks, MockSandbox())
    seen: list[str] = []

    class Spy:
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] == "http":
                seen.append(scope["path"])
            await self.inner(scope, receive, send)

    app.add_middleware(Spy)
    with TestClient(app) as c:
        assert c.post("/reset", json={"task": "toy_mean", "episode_id": "a"}).status_code == 200
        assert c.post("/step", json={"action": {"action_type": "view_git_diff"}}).status_code == 200
    assert seen == ["/reset", "/step"]
