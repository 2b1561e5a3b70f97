"""HTTP API against a real uvicorn process (mock mode, toy task)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from sandbox_env.client import EnvClientError, TriageClient
from sandbox_env.suite.oracle import oracle_actions
from sandbox_env.suite.tasks import TaskRegistry


def test_health_tasks_schema(toy_server: str) -> None:
    h = httpx.get(toy_server + "/health").json()
    assert h["status"] == "healthy" and h["mode"] == "mock" and h["task_count"] == 1
    assert "docker_available" in h
    assert [t["id"] for t in httpx.get(toy_server + "/tasks").json()] == ["toy_mean"]
    schema = httpx.get(toy_server + "/schema").json()
    assert set(schema) == {"action", "observation", "state"}
    assert "submit_fix" in str(schema["action"])


def test_unknown_task_is_404_naming_available(toy_server: str) -> None:
    r = httpx.post(toy_server + "/reset", json={"task": "nope"})
    assert r.status_code == 404 and "toy_mean" in r.json()["detail"]


@pytest.mark.parametrize(("body", "status", "fragment"), [
    (b"{not json", 400, "malformed JSON"),
    (b"[1, 2]", 422, "JSON object"),
    (b'{"task": 5}', 422, "task"),
    (b'{"task": "toy_mean", "bogus": 1}', 422, "bogus"),
    (b'{"seed": "abc"}', 422, "seed"),
])
def test_bad_reset_bodies(toy_server: str, body: bytes, status: int, fragment: str) -> None:
    r = httpx.post(toy_server + "/reset", content=body, headers={"content-type": "application/json"})
    assert r.status_code == status and fragment in r.json()["detail"]


def test_flat_and_wrapped_steps_header_and_body_ids(toy_server: str) -> None:
    ep = httpx.post(toy_server + "/reset", json={"task": "toy_mean", "episode_id": "flat-1"}).json()
    assert ep["episode_id"] == "flat-1" and ep["observation"]["step_number"] == 0
    r = httpx.post(toy_server + "/step", json={"action_type": "read_file", "filename": "stats.py",
                                               "episode_id": "flat-1"})
    assert r.status_code == 200 and "def mean" in r.json()["observation"]["terminal_output"]
    r = httpx.post(toy_server + "/step", json={"action": {"action_type": "view_git_diff"}},
                   headers={"X-Episode-Id": "flat-1"})
    assert r.status_code == 200 and r.json()["observation"]["step_number"] == 2
    st = httpx.get(toy_server + "/state", params={"episode_id": "flat-1"}).json()
    assert st["step_count"] == 2 and st["actions_taken"] == ["read_file", "view_git_diff"]
    assert httpx.post(toy_server + "/close", json={"episode_id": "flat-1"}).status_code == 200


def test_step_errors_are_4xx(toy_server: str) -> None:
    url = toy_server
    httpx.post(url + "/reset", json={"task": "toy_mean", "episode_id": "e-a"})
    httpx.post(url + "/reset", json={"task": "toy_mean", "episode_id": "e-b"})
    cases = [
        ({"action_type": "view_git_diff"}, 409, "episodes are live"),
        ({"action_type": "view_git_diff", "episode_id": "ghost"}, 404, "unknown episode_id"),
        ({"action_type": "launch_missiles", "episode_id": "e-a"}, 422, "action_type"),
        ({"action_type": "read_file", "filename": 7, "episode_id": "e-a"}, 422, "filename"),
        ({"episode_id": "e-a"}, 422, "no action_type"),
        ({"action_type": "read_file", "filename": "../../etc/passwd", "episode_id": "e-a"}, 200, ""),
        ({"action_type": "view_git_diff", "episode_id": 5}, 422, "episode_id"),
    ]
    for body, status, fragment in cases:
        r = httpx.post(url + "/step", json=body)
        assert r.status_code == status, (body, r.text)
        if status != 200:
            assert fragment in r.json()["detail"], r.text
        else:
            assert "outside the workspace" in r.json()["observation"]["last_action_error"]
    r = httpx.post(url + "/step", json={"action_type": "submit_fix", "explanation": "x", "episode_id": "e-a"})
    assert r.json()["done"] is True
    r = httpx.post(url + "/step", json={"action_type": "view_git_diff", "episode_id": "e-a"})
    assert r.status_code == 409 and "done" in r.json()["detail"]
    for e in ("e-a", "e-b"):
        httpx.post(url + "/close", json={"episode_id": e})


def test_huge_payload_is_413(toy_server: str) -> None:
    big = "x" * 2_000_000
    r = httpx.post(toy_server + "/step", json={"action_type": "execute_bash", "command": big})
    assert r.status_code == 413


def test_state_without_episode(toy_server: str) -> None:
    r = httpx.get(toy_server + "/state", params={"episode_id": "missing"})
    assert r.status_code == 404


def test_client_oracle_and_isolated_concurrent_sessions(toy_server: str, toy_tasks: TaskRegistry) -> None:
    actions = oracle_actions(toy_tasks.get("toy_mean"))

    def play(i: int) -> tuple[str, float]:
        with TriageClient(toy_server) as c:
            c.reset(task="toy_mean", episode_id=f"conc-{i}")
            if i % 2:  # odd sessions sabotage their own copy
                c.step({"action_type": "edit_file", "filename": "stats.py",
                        "old_str": "(len(values) - 1)", "new_str": f"(len(values) - {i + 1})"})
            for a in actions:
                res = c.step(a)
                if res.done:
                    break
            st = c.state()
            c.close_episode()
            return st.episode_id, st.score or 0.0

    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(play, range(32)))
    for i, (eid, score) in enumerate(results):
        assert eid == f"conc-{i}"
        assert (score >= 0.9) == (i % 2 == 0), (i, score)
    assert httpx.get(toy_server + "/health").json()["active_sessions"] == 0


def test_client_raises_with_detail(toy_server: str) -> None:
    with TriageClient(toy_server) as c, pytest.raises(EnvClientError) as err:
        c.reset(task="missing")
    assert err.value.status == 404
