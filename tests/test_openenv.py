"""OpenEnv faces against real uvicorn servers: /ws with the real OpenEnv client, /mcp, validate."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from openenv.core.generic_client import GenericEnvClient
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from sandbox_env.server.mcp import TOOLS
from sandbox_env.suite.oracle import oracle_actions
from sandbox_env.suite.tasks import TaskRegistry

from .conftest import ROOT, start_server

OPENENV = Path(sys.executable).parent / "openenv"


def ws_url(url: str) -> str:
    return url.replace("http://", "ws://") + "/ws"


def ask(ws: ClientConnection, message: dict[str, Any] | str) -> dict[str, Any]:
    ws.send(message if isinstance(message, str) else json.dumps(message))
    return json.loads(ws.recv(timeout=30))


def wait_sessions(url: str, n: int, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while (active := httpx.get(url + "/health").json()["active_sessions"]) != n:
        assert time.monotonic() < deadline, f"{active} sessions live, expected {n}"
        time.sleep(0.05)


def rpc(url: str, method: str, params: dict[str, Any] | None = None, rid: int = 1,
        **kw: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "id": rid}
    if params is not None:
        body["params"] = params
    r = httpx.post(url + "/mcp", json=body, **kw)
    assert r.status_code == 200, r.text
    return r.json()


# ------------------------------------------------------------------ the real OpenEnv client
def test_openenv_generic_client_plays_an_episode_over_ws(server: str, real_tasks: TaskRegistry) -> None:
    task = real_tasks.get("oom_graph_leak")
    with GenericEnvClient(base_url=server).sync() as env:
        # with a task, seed N is variant N of its family (docs/variants.md): seed 0 is the folder
        first = env.reset(task=task.id, seed=0, compact=True, some_dataset_column="ignored")
        assert first.observation["task_name"] == task.id and first.done is False
        assert set(first.observation["current_files"]) == set(task.repo_files())
        wait_sessions(server, 1)
        result = None
        for action in oracle_actions(task):
            result = env.step(action)
            if action["action_type"] == "execute_bash":  # observations carry only touched files
                assert not result.observation["current_files"]
        assert result is not None and result.done and result.reward >= 0.9
        assert result.observation["verdict"]["passed"] is True
        state = env.state()
        assert state["done"] and state["submitted"] and state["task_name"] == task.id
        with pytest.raises(RuntimeError, match="EPISODE_DONE"):
            env.step({"action_type": "view_git_diff"})
        with pytest.raises(RuntimeError, match="INVALID_ACTION"):
            env.step({"action_type": "launch_missiles"})
    wait_sessions(server, 0)  # closing the client closed its environment


def test_openenv_validate_url_passes(server: str) -> None:
    proc = subprocess.run([str(OPENENV), "validate", "--url", server, "--json"],
                          check=False, capture_output=True, text=True, timeout=120)
    report = json.loads(proc.stdout)
    assert proc.returncode == 0 and report["passed"], proc.stdout + proc.stderr
    assert {c["id"] for c in report["criteria"]} >= {"health_endpoint", "metadata_endpoint",
                                                     "schema_endpoint", "mcp_endpoint"}


def test_manifest_is_valid_and_matches_the_server(server: str, real_tasks: TaskRegistry,
                                                  tmp_path: Path) -> None:
    # validate what a clean checkout holds: the validator hashes the whole tree before and after
    # and refuses a tree that changes meanwhile (build outputs, other test runs' temp files)
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True,
                             text=True).stdout.split("\0")
    for rel in filter(None, tracked):
        if (ROOT / rel).is_file():
            (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, tmp_path / rel)
    proc = subprocess.run([str(OPENENV), "validate", "--level", "static", str(tmp_path)],
                          check=False, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "Verdict: PASS" in proc.stdout, proc.stdout + proc.stderr
    manifest = yaml.safe_load((ROOT / "openenv.yaml").read_text())
    caps = manifest["validation"]["capabilities"]
    assert caps["declared_tools"] == [t["name"] for t in rpc(server, "tools/list")["result"]["tools"]]
    assert caps["declared_task_count"]["default"] == len(real_tasks)
    assert manifest["validation"]["network"]["mode"] == "no-network"
    assert (ROOT / caps["oracle"]["location"]).is_file()
    meta = httpx.get(server + "/metadata").json()
    assert meta["name"] == manifest["name"] and meta["version"] == manifest["version"]


# ------------------------------------------------------------------ the raw /ws protocol
def test_ws_protocol_errors_and_close(server: str) -> None:
    with connect(ws_url(server)) as ws:
        assert ask(ws, "{nope")["data"]["code"] == "INVALID_JSON"
        assert ask(ws, "[1]")["data"]["code"] == "VALIDATION_ERROR"
        assert ask(ws, {"type": "dance"})["data"]["code"] == "UNKNOWN_TYPE"
        assert ask(ws, {"type": "state"})["data"]["code"] == "NOT_RESET"
        diff = {"type": "step", "data": {"action_type": "view_git_diff"}}
        assert ask(ws, diff)["data"]["code"] == "NOT_RESET"
        bad = ask(ws, {"type": "reset", "data": {"task": "no_such_task"}})
        assert bad["type"] == "error" and bad["data"]["code"] == "UNKNOWN_TASK"
        assert "oom_graph_leak" in bad["data"]["message"]
        assert ask(ws, {"type": "reset", "data": {"seed": "x"}})["data"]["code"] == "VALIDATION_ERROR"
        obs = ask(ws, {"type": "reset", "data": {"task": "compile_graph_break", "episode_id": "ws-ep"}})
        assert obs["type"] == "observation" and obs["data"]["episode_id"] == "ws-ep"
        # a step may be wrapped like HTTP's {"action": {...}}; binary frames are read as UTF-8
        read = {"action_type": "read_file", "filename": "train.py"}
        step = ask(ws, {"type": "step", "data": {"action": read}})
        assert step["type"] == "observation" and "train.py" in step["data"]["observation"]["current_files"]
        ws.send(json.dumps({"type": "state"}).encode())
        state = json.loads(ws.recv(timeout=10))
        assert state["type"] == "state" and state["data"]["step_count"] == 1
        # the same episode is visible over HTTP while the socket lives, but not closable there
        assert httpx.get(server + "/state", params={"episode_id": "ws-ep"}).json()["step_count"] == 1
        assert httpx.post(server + "/reset", json={"episode_id": "ws-ep"}).status_code == 409
        bad = ask(ws, {"type": "step", "data": {"action_type": "edit_file", "filename": "train.py"}})
        assert bad["data"]["code"] == "INVALID_ACTION" and "old_str" in bad["data"]["message"]
        big = ask(ws, {"type": "step", "data": {"action_type": "execute_bash", "command": "x" * 1_100_000}})
        assert big["data"]["code"] == "PAYLOAD_TOO_LARGE"
        done = ask(ws, {"type": "step", "data": {"action_type": "submit_fix", "explanation": "no idea"}})
        assert done["data"]["done"] is True and done["data"]["reward"] < 0.2
        assert ask(ws, diff)["data"]["code"] == "EPISODE_DONE"
        again = ask(ws, {"type": "reset", "data": {"task": "oom_graph_leak"}})  # a new episode on the socket
        assert again["data"]["observation"]["step_number"] == 0 and again["data"]["done"] is False
        ws.send(json.dumps({"type": "close"}))
        with pytest.raises(ConnectionClosed):
            ws.recv(timeout=10)
    wait_sessions(server, 0)


def test_ws_disconnect_without_close_frees_the_session(server: str) -> None:
    with connect(ws_url(server)) as ws:
        ask(ws, {"type": "reset", "data": {"task": "oom_graph_leak"}})
        wait_sessions(server, 1)
        ws.socket.close()  # abrupt: no close handshake
        wait_sessions(server, 0)


def test_ws_mcp_messages_run_in_the_connection_episode(server: str) -> None:
    with connect(ws_url(server)) as ws:
        ask(ws, {"type": "reset", "data": {"task": "ddp_gradient_hang"}})
        tools = ask(ws, {"type": "mcp", "data": {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}})
        assert tools["type"] == "mcp" and len(tools["data"]["result"]["tools"]) == 6
        call = ask(ws, {"type": "mcp", "data": {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                                "params": {"name": "read_file",
                                                           "arguments": {"filename": "train.py"}}}})
        assert "def " in call["data"]["result"]["content"][0]["text"]
        assert ask(ws, {"type": "state"})["data"]["step_count"] == 1


# ------------------------------------------------------------------ MCP over HTTP
def test_mcp_tools_list_matches_the_action_models(server: str) -> None:
    init = rpc(server, "initialize", {"protocolVersion": "2025-06-18"})
    assert init["result"]["serverInfo"]["name"] == "sandbox-env"
    tools = rpc(server, "tools/list")["result"]["tools"]
    assert tools == TOOLS and [t["name"] for t in tools] == [
        "start_episode", "read_file", "edit_file", "execute_bash", "view_git_diff", "submit_fix"]
    edit = next(t for t in tools if t["name"] == "edit_file")
    assert edit["inputSchema"]["required"] == ["filename", "old_str", "new_str"]
    assert "action_type" not in edit["inputSchema"]["properties"] and edit["description"]


def test_mcp_session_lifecycle_and_tool_calls(server: str, real_tasks: TaskRegistry) -> None:
    created = rpc(server, "openenv/session/create", {"task": "fsdp_collective_deadlock"})["result"]
    sid = created["session_id"]
    assert created["observation"]["task_name"] == "fsdp_collective_deadlock"
    res = rpc(server, "tools/call", {"name": "read_file", "arguments": {"filename": "train.py"},
                                     "session_id": sid})["result"]
    assert res["isError"] is False and "[status]" in res["content"][0]["text"]
    assert res["structuredContent"]["observation"]["step_number"] == 1
    res = rpc(server, "tools/call", {"name": "read_file", "arguments": {"filename": "../etc/passwd"}},
              headers={"X-Episode-Id": sid})["result"]
    assert res["isError"] is True and "outside the workspace" in res["content"][0]["text"]
    err = rpc(server, "tools/call", {"name": "edit_file", "arguments": {"filename": "a"},
                                     "session_id": sid})["error"]
    assert err["code"] == -32602 and err["data"]["code"] == "INVALID_ACTION"
    err = rpc(server, "tools/call", {"name": "rm_rf", "arguments": {}, "session_id": sid})["error"]
    assert err["code"] == -32602 and "unknown tool" in err["message"]
    err = rpc(server, "tools/call", {"name": "view_git_diff", "session_id": "ghost"})["error"]
    assert err["code"] == -32602 and err["data"]["code"] == "UNKNOWN_EPISODE"
    assert rpc(server, "openenv/session/close", {"session_id": sid})["result"]["closed"] is True
    again = rpc(server, "openenv/session/close", {"session_id": sid})
    assert again["error"]["data"]["code"] == "UNKNOWN_EPISODE"
    wait_sessions(server, 0)


@pytest.mark.parametrize(("body", "code"), [
    (b"{}", -32600), (b"{oops", -32700), (b"[]", -32600), (b'"x"', -32600),
    (b'{"jsonrpc": "1.0", "method": "tools/list", "id": 1}', -32600),
    (b'{"jsonrpc": "2.0", "method": "tools/list", "params": [1], "id": 1}', -32600),
    (b'{"jsonrpc": "2.0", "method": "resources/list", "id": 1}', -32601),
    (b'{"jsonrpc": "2.0", "method": "openenv/session/create", "params": {"task": "x"}, "id": 1}', -32602),
])
def test_mcp_bad_requests_are_json_rpc_errors(server: str, body: bytes, code: int) -> None:
    r = httpx.post(server + "/mcp", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 200 and r.json()["jsonrpc"] == "2.0" and r.json()["error"]["code"] == code


def test_mcp_notification_gets_no_body(server: str) -> None:
    r = httpx.post(server + "/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert r.status_code == 202 and r.content == b""


# ------------------------------------------------------------------ capacity and idleness
def test_capacity_reached_over_ws_http_and_the_openenv_client() -> None:
    proc, url = start_server(ROOT / "task_repos", "mock", "--max-sessions", "2")
    try:
        a, b = connect(ws_url(url)).__enter__(), connect(ws_url(url)).__enter__()
        ask(a, {"type": "reset", "data": {"task": "oom_graph_leak"}})
        ask(b, {"type": "reset", "data": {"task": "oom_graph_leak"}})
        with connect(ws_url(url)) as c:
            frame = json.loads(c.recv(timeout=10))
            assert frame["type"] == "error" and frame["data"]["code"] == "CAPACITY_REACHED"
            assert frame["data"]["max_sessions"] == 2
            with pytest.raises(ConnectionClosed) as closed:
                c.recv(timeout=10)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1013
        r = httpx.post(url + "/reset", json={"task": "oom_graph_leak"})
        assert r.status_code == 503 and r.json()["code"] == "CAPACITY_REACHED"
        with (pytest.raises(RuntimeError, match="CAPACITY_REACHED"),
              GenericEnvClient(base_url=url).sync() as env):
            env.reset(task="oom_graph_leak")
        health = httpx.get(url + "/health").json()
        assert health["active_sessions"] == 2 and health["max_sessions"] == 2
        a.close()
        wait_sessions(url, 1)
        assert httpx.post(url + "/reset", json={"task": "oom_graph_leak"}).status_code == 200
        b.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_idle_sessions_expire_without_traffic() -> None:
    proc, url = start_server(ROOT / "task_repos", "mock", "--idle-timeout", "1")
    try:
        eid = httpx.post(url + "/reset", json={"task": "oom_graph_leak"}).json()["episode_id"]
        with connect(ws_url(url)) as ws:
            ask(ws, {"type": "reset", "data": {"task": "oom_graph_leak"}})
            frame = json.loads(ws.recv(timeout=10))  # silent past the timeout
            assert frame["data"]["code"] == "IDLE_TIMEOUT"
            with pytest.raises(ConnectionClosed):
                ws.recv(timeout=10)
        wait_sessions(url, 0)  # the HTTP one too: the reaper runs without requests
        assert httpx.get(url + "/health").json()["expired_sessions"] >= 1
        r = httpx.post(url + "/step", json={"action_type": "view_git_diff", "episode_id": eid})
        assert r.status_code == 404 and r.json()["code"] == "UNKNOWN_EPISODE"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
