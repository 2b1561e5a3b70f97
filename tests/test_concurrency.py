"""Many live episodes at once over HTTP and /ws, mock and docker: no cross-talk, no leftovers."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.sync.client import connect

from sandbox_env.client import TriageClient
from sandbox_env.sandbox.docker import labelled
from sandbox_env.suite.oracle import oracle_actions
from sandbox_env.suite.tasks import TaskRegistry

from .conftest import ROOT, start_server

Step = Callable[[dict[str, Any]], dict[str, Any]]


class HttpEpisode:
    def __init__(self, url: str) -> None:
        self.client = TriageClient(url)

    def reset(self, task: str, episode_id: str) -> dict[str, Any]:
        return self.client.reset(task=task, episode_id=episode_id).model_dump()

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        return self.client.step(action).model_dump()

    def state(self) -> dict[str, Any]:
        return self.client.state().model_dump()

    def close(self) -> None:
        self.client.close_episode()
        self.client.close()


class WsEpisode:
    def __init__(self, url: str) -> None:
        self.ws = connect(url.replace("http://", "ws://") + "/ws", max_size=None).__enter__()

    def _ask(self, message: dict[str, Any]) -> dict[str, Any]:
        self.ws.send(json.dumps(message))
        reply = json.loads(self.ws.recv(timeout=600))
        assert reply["type"] != "error", reply
        return reply["data"]

    def reset(self, task: str, episode_id: str) -> dict[str, Any]:
        return self._ask({"type": "reset", "data": {"task": task, "episode_id": episode_id}})

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        return self._ask({"type": "step", "data": action})

    def state(self) -> dict[str, Any]:
        return self._ask({"type": "state"})

    def close(self) -> None:
        self.ws.send(json.dumps({"type": "close"}))
        self.ws.close()


def play(ep: HttpEpisode | WsEpisode, i: int, task_id: str, *, tasks: TaskRegistry,
         run: str, start: threading.Barrier) -> dict[str, Any]:
    """One episode that marks its workspace, checks it sees only its own mark, then plays.

    Even sessions apply the reference fix, odd ones submit without fixing: each score must
    match its own play, whatever the others did at the same moment.
    """
    task = tasks.get(task_id)
    start.wait(timeout=60)
    first = ep.reset(task_id, f"conc-{i}")
    assert first["episode_id"] == f"conc-{i}" and set(first["observation"]["current_files"]) == set(
        task.repo_files())
    mark = f"owner_{i}.txt"
    ep.step({"action_type": "edit_file", "filename": mark, "old_str": "", "new_str": f"session {i}\n"})
    out = ep.step({"action_type": "execute_bash", "command": run.format(mark=mark)})["observation"]
    seen = out["terminal_output"]
    assert re.findall(r"session (\d+)", seen) == [str(i)], seen
    assert set(re.findall(r"owner_(\d+)", seen)) <= {str(i)}, seen
    diff = ep.step({"action_type": "view_git_diff"})["observation"]["terminal_output"]
    assert re.findall(r"owner_(\d+)", diff) == [str(i)], diff
    steps = 3
    actions = oracle_actions(task) if i % 2 == 0 else [
        {"action_type": "submit_fix", "explanation": f"session {i} gives up"}]
    outputs = []
    for a in actions:
        res = ep.step(a)
        outputs.append(res["observation"]["terminal_output"][:300])
        steps += 1
        if res["done"]:
            break
    state = ep.state()
    ep.close()
    assert state["episode_id"] == f"conc-{i}" and state["step_count"] == steps, (state, outputs)
    return {"i": i, "score": res["observation"]["score"], "passed": res["observation"]["verdict"]["passed"]}


def run_concurrently(url: str, tasks: TaskRegistry, task_ids: list[str], run: str) -> list[dict[str, Any]]:
    n = len(task_ids)
    start = threading.Barrier(n)
    episodes = [(HttpEpisode if i % 4 < 2 else WsEpisode)(url) for i in range(n)]  # half over /ws
    with ThreadPoolExecutor(n) as pool:
        futures = [pool.submit(play, episodes[i], i, task_ids[i], tasks=tasks, run=run, start=start)
                   for i in range(n)]
        results = [f.result(timeout=900) for f in futures]
    for r in results:
        if r["i"] % 2 == 0:
            assert r["passed"] and r["score"] >= 0.9, r
        else:
            assert not r["passed"] and r["score"] < 0.2, r
    health = httpx.get(url + "/health").json()
    assert health["active_sessions"] == 0, health
    return results


def test_32_mock_sessions_over_http_and_ws(real_tasks: TaskRegistry) -> None:
    proc, url = start_server(ROOT / "task_repos", "mock", "--max-sessions", "32")
    try:
        ids = [real_tasks.ids()[i % len(real_tasks)] for i in range(32)]
        run_concurrently(url, real_tasks, ids, "cat {mark}")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def idless_client(url: str, i: int, task_id: str, tasks: TaskRegistry,
                  start: threading.Barrier) -> tuple[str, float, bool]:
    """The most natural HTTP pattern: reset without an id, take the id from the reply, step
    with it. Even clients play the reference fix, odd ones give up; every reply must be theirs."""
    with httpx.Client(base_url=url, timeout=120) as http:
        start.wait(timeout=60)
        r = http.post("/reset", json={"task": task_id})
        assert r.status_code == 200, (i, r.text)
        eid = r.json()["episode_id"]
        actions = ([{"action_type": "read_file", "filename": tasks.get(task_id).signal_files[0]}]
                   + (oracle_actions(tasks.get(task_id)) if i % 2 == 0 else
                      [{"action_type": "submit_fix", "explanation": f"client {i} gives up"}]))
        for a in actions:
            r = http.post("/step", json={**a, "episode_id": eid})
            assert r.status_code == 200, (i, a["action_type"], r.status_code, r.text[:300])
            assert r.json()["episode_id"] == eid
            if r.json()["done"]:
                break
        st = http.get("/state", params={"episode_id": eid})
        assert st.status_code == 200 and st.json()["done"], (i, st.text[:300])
        return eid, r.json()["observation"]["score"], r.json()["observation"]["verdict"]["passed"]


def test_64_idless_reset_clients_each_keep_their_episode(real_tasks: TaskRegistry) -> None:
    """64 clients reset id-less at the same moment and step by the id of their reply: no one's
    episode is ended by another's reset (0 errors), twice over, and live episodes stay bounded."""
    proc, url = start_server(ROOT / "task_repos", "mock", "--max-sessions", "64")
    try:
        for wave in range(2):  # the second wave needs the first's finished episodes evicted
            start = threading.Barrier(64)
            ids = [real_tasks.ids()[i % len(real_tasks)] for i in range(64)]
            with ThreadPoolExecutor(64) as pool:
                futures = [pool.submit(idless_client, url, i, ids[i], real_tasks, start) for i in range(64)]
                results = [f.result(timeout=600) for f in futures]
            assert len({eid for eid, _, _ in results}) == 64, wave
            for i, (_, score, passed) in enumerate(results):
                assert passed == (i % 2 == 0) and (score >= 0.9 if passed else score < 0.2), (wave, i)
            assert httpx.get(url + "/health").json()["active_sessions"] <= 64
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.docker
def test_4_docker_sessions_over_http_and_ws(toy_root: Path, toy_tasks: TaskRegistry) -> None:
    docker = pytest.importorskip("docker")
    try:
        client = docker.from_env(timeout=5)
        client.images.get("sandbox-env-runner:torch2.13.0")
    except Exception as exc:
        pytest.skip(f"Docker engine or runner image not available: {exc}")
    proc, url = start_server(toy_root, "docker", "--max-sessions", "4", "--owner", "pytest-conc")
    try:
        assert httpx.get(url + "/health").json()["mode"] == "docker"
        # the command really runs in each episode's own container: it sees that workspace only
        run_concurrently(url, toy_tasks, ["toy_mean"] * 4, "cat {mark}; ls owner_* ; hostname >/dev/null")
        time.sleep(1)  # the warm pool may be topping itself up
        left = labelled(client, "sandbox-env.owner=pytest-conc")
        assert len(left) <= 2, [c.name for c in left]  # the warm pool only: every run's box is gone
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_a_long_run_never_blocks_other_sessions(toy_root: Path) -> None:
    """A command that takes seconds runs in a worker thread: other episodes keep stepping."""
    proc, url = start_server(toy_root, "local")
    try:
        slow, fast = TriageClient(url), TriageClient(url)
        slow.reset(task="toy_mean")
        fast.reset(task="toy_mean")
        with ThreadPoolExecutor(1) as pool:
            started = time.monotonic()
            sleep = {"action_type": "execute_bash", "command": "sleep 3; echo slept"}
            running = pool.submit(slow.step, sleep)
            time.sleep(0.3)
            latencies = []
            for _ in range(5):
                t = time.monotonic()
                fast.step({"action_type": "view_git_diff"})
                latencies.append(time.monotonic() - t)
            assert not running.done() and max(latencies) < 0.5, latencies
            assert "slept" in running.result(timeout=30).observation.terminal_output
            assert time.monotonic() - started >= 3
        for c in (slow, fast):
            c.close_episode()
            c.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
