"""Clients that never send an episode id, like the seed's agent, against a real server.

The seed's agent (pytorch-triage-env's inference.py) plays its tasks one after another on one
server: ``POST /reset {"task": ...}``, then flat ``POST /step`` actions, never an episode id,
never a close; it builds each prompt from ``current_files``, which its server filled with
every file on every step. :class:`SeedLikeAgent` does exactly that, with urllib (the library
that saw a connection reset instead of a 413), and a scripted policy (the oracle's actions).
"""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from sandbox_env.suite.oracle import oracle_actions
from sandbox_env.suite.tasks import TaskRegistry


class SeedLikeAgent:
    """The seed's client behaviour: id-less requests, flat actions, prompts from current_files."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.prompts: list[str] = []

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        req = urllib.request.Request(self.url + path, data=json.dumps(body).encode(),
                                     headers={"content-type": "application/json"}, method="POST")
        with urllib.request.urlopen(req, timeout=60) as r:
            return json.loads(r.read())

    def prompt(self, obs: dict[str, Any]) -> str:
        files = "\n".join(f"--- {p} ---\n{t}" for p, t in sorted(obs["current_files"].items()))
        return (f"{obs['task_description']}\n{files}\n$ {obs['terminal_output']}\n"
                f"status={obs['run_status']} hint={obs['hint']}")

    def play(self, task: str, actions: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """One episode; the replies of every step (reward, done, observation)."""
        res = self.post("/reset", {"task": task})
        replies = []
        for action in actions:
            self.prompts.append(self.prompt(res["observation"]))
            res = self.post("/step", action)
            assert {"reward", "done", "observation"} <= set(res)
            replies.append(res)
            if res["done"]:
                break
        return replies


def live(url: str) -> int:
    return httpx.get(url + "/health").json()["active_sessions"]


def test_seed_agent_plays_every_task_in_a_row(server: str, real_tasks: TaskRegistry) -> None:
    """Every task verifies, twice over, with no ids and no close; sessions never pile up."""
    agent = SeedLikeAgent(server)
    tasks = [t["id"] for t in httpx.get(server + "/tasks").json()]
    assert len(tasks) == len(real_tasks) >= 4
    for _round in range(2):
        for task_id in tasks:
            task = real_tasks.get(task_id)
            replies = agent.play(task_id, oracle_actions(task))
            last = replies[-1]
            assert last["done"] and last["observation"]["verdict"]["passed"], (task_id, last)
            assert last["reward"] >= 0.6
            assert live(server) == 1  # the previous id-less episode, finished, was reclaimed
            # mid-episode the observation still holds every file, with the edits applied
            for reply in replies:
                assert set(reply["observation"]["current_files"]) == set(task.repo_files())
            after_edit = next(r for r, a in zip(replies, oracle_actions(task), strict=False)
                              if a["action_type"] == "edit_file")
            edited = next(a for a in oracle_actions(task) if a["action_type"] == "edit_file")
            assert edited["new_str"] in after_edit["observation"]["current_files"][edited["filename"]]
    assert all("--- " in p for p in agent.prompts)


def test_idless_requests_follow_the_latest_idless_reset(server: str) -> None:
    agent = SeedLikeAgent(server)
    named = httpx.post(server + "/reset", json={"task": "oom_graph_leak", "episode_id": "named-1"}).json()
    a = agent.post("/reset", {"task": "compile_graph_break"})
    b = agent.post("/reset", {"task": "ddp_gradient_hang"})
    assert a["episode_id"] != b["episode_id"] != named["episode_id"]
    # id-less step and state go to b, the latest id-less reset; a is not finished: it stays live
    # for whoever reset it (a client may hold its id from the reply)
    step = agent.post("/step", {"action_type": "read_file", "filename": "train.py"})
    assert step["episode_id"] == b["episode_id"]
    assert step["observation"]["task_name"] == "ddp_gradient_hang"
    assert httpx.get(server + "/state").json()["episode_id"] == b["episode_id"]
    assert httpx.get(server + "/state", params={"episode_id": a["episode_id"]}).json()["step_count"] == 0
    # the named episode was never touched by any of it
    st = httpx.get(server + "/state", params={"episode_id": "named-1"}).json()
    assert st["step_count"] == 0 and st["task_name"] == "oom_graph_leak"
    # an id-less episode addressed by its id becomes named: the next id-less reset keeps it
    httpx.get(server + "/state", params={"episode_id": b["episode_id"]})
    c = agent.post("/reset", {"task": "oom_graph_leak"})
    assert httpx.get(server + "/state", params={"episode_id": b["episode_id"]}).status_code == 200
    assert httpx.get(server + "/state").json()["episode_id"] == c["episode_id"]
    for eid in ("named-1", a["episode_id"], b["episode_id"], c["episode_id"]):
        assert httpx.post(server + "/close", json={"episode_id": eid}).status_code == 200
    assert live(server) == 0


def test_finished_episodes_never_make_idless_requests_ambiguous(server: str) -> None:
    for eid in ("fin-1", "open-1"):
        httpx.post(server + "/reset", json={"task": "oom_graph_leak", "episode_id": eid})
    r = httpx.post(server + "/step", json={"action_type": "read_file", "filename": "train.py"})
    assert r.status_code == 409 and r.json()["code"] == "EPISODE_ID_REQUIRED"
    r = httpx.post(server + "/step", json={"action_type": "submit_fix", "explanation": "x",
                                           "episode_id": "fin-1"})
    assert r.json()["done"]
    r = httpx.post(server + "/step", json={"action_type": "read_file", "filename": "train.py"})
    assert r.status_code == 200 and r.json()["episode_id"] == "open-1"
    for eid in ("fin-1", "open-1"):
        httpx.post(server + "/close", json={"episode_id": eid})
    r = httpx.post(server + "/step", json={"action_type": "read_file", "filename": "train.py"})
    assert r.status_code == 409 and r.json()["code"] == "NO_EPISODE"


def test_compact_observation_on_request(server: str) -> None:
    r = httpx.post(server + "/reset", json={"task": "oom_graph_leak", "episode_id": "cmp",
                                            "compact": True}).json()
    assert len(r["observation"]["current_files"]) > 1  # every file on reset
    r = httpx.post(server + "/step", json={"action_type": "read_file", "filename": "train.py",
                                           "episode_id": "cmp"}).json()
    assert list(r["observation"]["current_files"]) == ["train.py"]
    r = httpx.post(server + "/step", json={"action_type": "view_git_diff", "episode_id": "cmp"}).json()
    assert r["observation"]["current_files"] == {}
    assert httpx.post(server + "/reset", json={"compact": "yes"}).status_code == 422
    httpx.post(server + "/close", json={"episode_id": "cmp"})


def raw_post(url: str, body_parts: list[bytes], chunked: bool) -> tuple[int, dict[str, Any]]:
    """POST /step with http.client, streaming the body the way the caller says."""
    u = urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    headers = {"content-type": "application/json"}
    if chunked:
        conn.request("POST", "/step", body=iter(body_parts), headers=headers, encode_chunked=True)
    else:
        conn.request("POST", "/step", body=b"".join(body_parts), headers=headers)
    resp = conn.getresponse()
    status, data = resp.status, json.loads(resp.read())
    conn.close()
    return status, data


@pytest.mark.parametrize("size_mb", [2, 5, 12])
def test_over_limit_body_is_a_readable_413(server: str, size_mb: int) -> None:
    """urllib, which saw a connection reset before, reads the 413 (declared length)."""
    body = json.dumps({"action_type": "execute_bash", "command": "x" * (size_mb << 20)}).encode()
    req = urllib.request.Request(server + "/step", data=body,
                                 headers={"content-type": "application/json"}, method="POST")
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=60)
    assert err.value.code == 413
    assert json.loads(err.value.read())["code"] == "PAYLOAD_TOO_LARGE"
    assert httpx.get(server + "/health").status_code == 200


def test_over_limit_chunked_body_is_a_readable_413(server: str) -> None:
    part = b"x" * (256 << 10)
    status, data = raw_post(server, [b'{"action_type": "execute_bash", "command": "', *[part] * 20, b'"}'],
                            chunked=True)
    assert status == 413 and data["code"] == "PAYLOAD_TOO_LARGE"
