"""Real MCP and OpenEnv clients, unmodified, against a real uvicorn server in mock mode.

The clients run as subprocesses of their own venvs (``scripts/client-venvs.sh`` builds them
under ``.venvs/``): mcp 2.x and 1.x, and openenv-core 0.3 (it installs the same ``openenv``
package as the dev extra's openenv 0.10, which runs from ``.venv``). Under CI a missing venv
fails the test; elsewhere it skips.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from sandbox_env.server.mcp import TOOL_NAMES
from sandbox_env.suite.oracle import oracle_actions
from sandbox_env.suite.tasks import TaskRegistry

from .conftest import ROOT
from .test_openenv import ask, wait_sessions, ws_url

CLIENTS = Path(__file__).parent / "clients"
TASKS = ("oom_graph_leak", "compile_graph_break")


def client_python(venv: str) -> Path:
    """The interpreter of a client venv ("main" is the test's own)."""
    if venv == "main":
        return Path(sys.executable)
    python = ROOT / ".venvs" / venv / "bin" / "python"
    if not python.exists():
        msg = f"client venv .venvs/{venv} is missing: run scripts/client-venvs.sh"
        if os.environ.get("CI") == "true":
            pytest.fail(msg)
        pytest.skip(msg)
    return python


def run_clients(*runs: tuple[Path, list[str], Any]) -> list[dict[str, Any]]:
    """Start client scripts at once (python, argv, stdin JSON); their JSON reports."""
    procs = [subprocess.Popen([str(py), *argv], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for py, argv, _ in runs]
    reports = []
    for proc, (_, _, stdin) in zip(procs, runs, strict=True):
        out, err = proc.communicate(json.dumps(stdin), timeout=240)
        assert proc.returncode == 0, err[-4000:]
        reports.append(json.loads(out))
    return reports


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def calls_for(task_id: str, real_tasks: TaskRegistry) -> list[dict[str, Any]]:
    return [{"tool": a["action_type"], "args": {k: v for k, v in a.items() if k != "action_type"}}
            for a in oracle_actions(real_tasks.get(task_id))]


@pytest.mark.parametrize("venv", ["mcp2", "mcp1"])
def test_mcp_sdk_clients_play_two_sessions_to_a_verified_fix(server: str, venv: str,
                                                             real_tasks: TaskRegistry) -> None:
    python = client_python(venv)
    plans = []
    for task, other in (TASKS, TASKS[::-1]):
        plans.append([{"tool": "read_file", "args": {"filename": "train.py"}},
                      # with a task, seed N is variant N of its family (docs/variants.md): 0 is the folder
                      {"tool": "start_episode", "args": {"task": task, "seed": 0}},
                      *calls_for(task, real_tasks),
                      {"tool": "start_episode", "args": {"task": other, "compact": True}},  # restart
                      {"tool": "read_file", "args": {"filename": "train.py"}}])
    [report] = run_clients((python, [str(CLIENTS / "mcp_episodes.py"), server], plans))
    assert report["mcp"].startswith("2." if venv == "mcp2" else "1.")
    episode_ids = set()
    for (task, other), session in zip((TASKS, TASKS[::-1]), report["sessions"], strict=True):
        assert tuple(session["tools"]) == TOOL_NAMES
        before, started, *steps, restarted, reread = session["calls"]
        assert before["isError"] and "start_episode" in before["text"] and before["structured"] is None
        obs = started["structured"]["observation"]
        assert not started["isError"] and obs["task_name"] == task and obs["step_number"] == 0
        eid = started["structured"]["episode_id"]
        episode_ids.add(eid)
        files = real_tasks.get(task).repo_files()
        assert obs["current_files"] == {n: sha(t) for n, t in files.items()}  # every file (default)
        for step in steps:
            assert step["structured"]["episode_id"] == eid
            assert step["structured"]["observation"]["task_name"] == task
        final = steps[-1]["structured"]
        assert final["done"] and final["reward"] >= 0.9 and final["observation"]["verdict"]["passed"]
        assert restarted["structured"]["observation"]["task_name"] == other
        assert restarted["structured"]["episode_id"] == eid  # the session's one episode, restarted
        other_train = sha(real_tasks.get(other).repo_files()["train.py"])
        assert reread["structured"]["observation"]["current_files"] == {"train.py": other_train}  # compact
    assert len(episode_ids) == 2
    wait_sessions(server, 0)  # the clients' DELETE closed both episodes


@pytest.mark.parametrize(("venv", "mode"), [("main", "production"), ("main", "ws"),
                                            ("openenv-core", "ws"), ("openenv-core", "production")])
def test_openenv_mcp_tool_clients_call_tools_in_their_own_episode(server: str, venv: str, mode: str,
                                                                  real_tasks: TaskRegistry) -> None:
    python = client_python(venv)
    script = str(CLIENTS / "openenv_episode.py")
    reports = run_clients(*[(python, [script, server, mode, task],
                             oracle_actions(real_tasks.get(task))) for task in TASKS])
    for task, report in zip(TASKS, reports, strict=True):
        assert report["line"].startswith("openenv==0.10" if venv == "main" else "openenv-core==0.3")
        assert tuple(report["tools"]) == TOOL_NAMES
        calls = report["calls"]
        assert all("raised" not in c for c in calls), calls
        eids = {c["structuredContent"]["episode_id"] for c in calls}
        assert len(eids) == 1, eids
        assert {c["structuredContent"]["observation"]["task_name"] for c in calls} == {task}
        read = next(c for c in calls if c["structuredContent"]["observation"]["step_number"] == 1)
        train = real_tasks.get(task).repo_files()["train.py"]
        assert read["structuredContent"]["observation"]["current_files"]["train.py"] == sha(train)
        final = calls[-1]["structuredContent"]
        assert final["done"] and final["reward"] >= 0.9 and final["observation"]["verdict"]["passed"]
        if mode == "ws" or venv == "main":  # the reset went to the episode the tools ran in
            assert report["state_episode_id"] in eids
    assert not set.intersection(*({c["structuredContent"]["episode_id"] for c in r["calls"]}
                                  for r in reports))
    wait_sessions(server, 0)


def mcp_post(url: str, body: dict[str, Any], sid: str | None = None) -> httpx.Response:
    headers = {"accept": "application/json, text/event-stream"}
    if sid:
        headers["mcp-session-id"] = sid
    return httpx.post(url + "/mcp", json=body, headers=headers, timeout=30)


def test_ws_attaches_to_an_mcp_session_episode_or_is_refused(server: str) -> None:
    init = mcp_post(server, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    sid = init.headers["mcp-session-id"]
    mcp_post(server, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
    with connect(ws_url(server) + f"?session_id={sid}") as ws:  # no episode yet: refused
        frame = json.loads(ws.recv(timeout=10))
        assert frame["data"]["code"] == "UNKNOWN_EPISODE" and "start_episode" in frame["data"]["message"]
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=10)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "start_episode", "arguments": {"task": "ddp_gradient_hang"}}}
    assert mcp_post(server, call, sid).json()["result"]["isError"] is False
    with connect(ws_url(server) + f"?session_id={sid}") as ws:
        assert ask(ws, {"type": "state"})["data"]["task_name"] == "ddp_gradient_hang"
        obs = ask(ws, {"type": "reset", "data": {"task": "oom_graph_leak"}})["data"]
        assert obs["episode_id"] == sid
        assert ask(ws, {"type": "reset", "data": {"episode_id": "other"}})["data"]["code"] == "EPISODE_IN_USE"
        call["params"] = {"name": "read_file", "arguments": {"filename": "train.py"}}
        res = mcp_post(server, call, sid).json()["result"]["structuredContent"]
        assert res["observation"]["task_name"] == "oom_graph_leak" and res["episode_id"] == sid
        assert ask(ws, {"type": "state"})["data"]["step_count"] == 1
        # ending the MCP session closes the episode; the borrowing socket is told and closed
        assert httpx.delete(server + "/mcp", headers={"mcp-session-id": sid}).status_code == 200
        frame = ask(ws, {"type": "state"})
        assert frame["data"]["code"] == "UNKNOWN_EPISODE"
        with pytest.raises(ConnectionClosed):
            ws.recv(timeout=10)
    assert mcp_post(server, call, sid).status_code == 404  # the session is gone
    for ghost in ("ghost", ""):
        with connect(ws_url(server) + f"?session_id={ghost}") as ws:
            assert json.loads(ws.recv(timeout=10))["data"]["code"] == "UNKNOWN_EPISODE"
    wait_sessions(server, 0)


def test_openenv_core_validate_url_passes(server: str) -> None:
    python = client_python("openenv-core")
    proc = subprocess.run([str(python.parent / "openenv"), "validate", "--url", server],
                          check=False, capture_output=True, text=True, timeout=120)
    report = json.loads(proc.stdout)
    assert proc.returncode == 0 and report["passed"], proc.stdout + proc.stderr
    assert "mcp_endpoint" in {c["id"] for c in report["criteria"]}
