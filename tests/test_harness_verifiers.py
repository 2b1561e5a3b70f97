"""The verifiers environment (sandbox_env/harnesses/verifiers_env.py) run by verifiers' own vf-eval.

verifiers 0.4.0 runs from its own venv (``scripts/harness-venvs.sh`` builds ``.venvs/verifiers``:
verifiers, sandbox-env without its server's dependencies, the ``sandbox-env-triage`` taskset
package, uv, and a wheelhouse for verifiers' chat program). ``vf-eval`` runs unmodified with its
``null`` harness (a chat loop whose only tools are the taskset's MCP tools) in the ``subprocess``
runtime, against a local scripted OpenAI-compatible endpoint that plays the oracle's actions as
tool calls (or a labelled wrong fix), offline: uv resolves the chat program from the wheelhouse
(``UV_NO_INDEX``), nothing is pushed. The traces verifiers writes carry the reward: >= 0.6 for
the reference fix, < 0.2 for the wrong one. Under CI a missing venv fails the test; elsewhere it
skips.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse

from sandbox_env.actions import ACTION_TYPES
from sandbox_env.suite.oracle import oracle_actions
from sandbox_env.suite.tasks import TaskRegistry

from .conftest import ROOT, ThreadedServer
from .test_harness_inspect import TASK, harness_python, http_view, wrong_fix

VENV = ROOT / ".venvs" / "verifiers"
WHEELS = ROOT / ".venvs" / "verifiers-wheels"


class ScriptedToolModel:
    """POST /v1/chat/completions answering each request with the next scripted tool call (the
    tool named as the request's tools name it), then a plain reply ending the loop."""

    def __init__(self) -> None:
        self.script: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        app = FastAPI()

        @app.post("/v1/chat/completions", response_model=None)
        async def chat(request: Request) -> JSONResponse | StreamingResponse:
            body = await request.json()
            with self._lock:
                self.requests.append(body)
                action = self.script.pop(0) if self.script else None
            n = len(self.requests)
            message: dict[str, Any] = {"role": "assistant", "content": None, "refusal": None}
            if action is None:
                message["content"], finish = "I have submitted the fix.", "stop"
            else:
                names = [t["function"]["name"] for t in body.get("tools", [])]
                kind = action["action_type"]
                name = next((x for x in names if x == kind), None) or next(
                    (x for x in names if x.endswith(kind)), kind)
                args = {k: v for k, v in action.items() if k != "action_type"}
                message["tool_calls"] = [{"id": f"call_{n}", "type": "function",
                                          "function": {"name": name, "arguments": json.dumps(args)}}]
                finish = "tool_calls"
            usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
            head = {"id": f"chatcmpl-{n}", "created": int(time.time()), "model": body["model"],
                    "system_fingerprint": None}
            if not body.get("stream"):
                return JSONResponse({**head, "object": "chat.completion", "usage": usage, "choices": [
                    {"index": 0, "logprobs": None, "finish_reason": finish, "message": message}]})
            delta = {"role": "assistant", "content": message["content"]}
            if "tool_calls" in message:
                delta["tool_calls"] = [{"index": 0, **c} for c in message["tool_calls"]]
            chunks = [{**head, "object": "chat.completion.chunk", "choices": [
                          {"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}]},
                      {**head, "object": "chat.completion.chunk", "choices": [
                          {"index": 0, "delta": {}, "logprobs": None, "finish_reason": finish}]},
                      {**head, "object": "chat.completion.chunk", "choices": [], "usage": usage}]
            sse = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
            return StreamingResponse(iter([sse]), media_type="text/event-stream")

        self.http = ThreadedServer(app)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http.port}/v1"

    def load(self, actions: list[dict[str, Any]]) -> None:
        with self._lock:
            self.script, self.requests = list(actions), []

    def start(self) -> ScriptedToolModel:
        self.http.start()
        return self

    def stop(self) -> None:
        self.http.stop()


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedToolModel]:
    server = ScriptedToolModel().start()
    yield server
    server.stop()


def vf_eval(model: ScriptedToolModel, out: Path, *extra: str, timeout: float = 600) -> dict[str, Any]:
    """``vf-eval`` on the seed task's test variant; the one trace it writes."""
    python = harness_python("verifiers")
    if not (WHEELS / ".done").exists():
        pytest.skip("the chat program's wheelhouse is missing: run scripts/harness-venvs.sh verifiers")
    env = {**os.environ, "SCRIPTED_API_KEY": "any", "PATH": f"{python.parent}:{os.environ['PATH']}",
           # verifiers' chat program is a uv script: resolved from the local wheelhouse, offline
           "UV_NO_INDEX": "1", "UV_FIND_LINKS": str(WHEELS), "UV_PYTHON": str(python),
           "UV_PYTHON_DOWNLOADS": "never", "UV_CACHE_DIR": str(ROOT / ".venvs" / "verifiers-uv-cache"),
           "HOME": str(out / "home")}
    env.pop("SANDBOX_ENV_JUDGE_MODEL", None)
    (out / "home").mkdir(parents=True, exist_ok=True)
    argv = [str(python.parent / "vf-eval"), "sandbox-env-triage",
            "--env.taskset.split", "test", "--env.taskset.tasks", TASK,
            "--env.agent.harness.id", "null", "--env.agent.runtime.type", "subprocess",
            "--model", "scripted-model", "--client.base-url", model.url,
            "--client.api-key-var", "SCRIPTED_API_KEY",
            "--no-rich", "--no-push", "--output-dir", str(out / "outputs"), *extra]
    proc = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=timeout, env=env,
                          cwd=out)
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-5000:])
    traces = list((out / "outputs").rglob("traces.jsonl"))
    assert len(traces) == 1, (traces, proc.stderr[-3000:])
    lines = [json.loads(x) for x in traces[0].read_text().splitlines() if x.strip()]
    assert len(lines) == 1, lines
    return lines[0]


def reward_of(trace: dict[str, Any]) -> float:
    (rollout,) = trace["traces"]
    assert not rollout["errors"], json.dumps(rollout["errors"])[:3000]
    value = rollout["rewards"]["terminal_score"]
    return float(value["score"] if isinstance(value, dict) else value)


def test_vf_eval_scripted_endpoint_reference_fix_and_wrong_fix(
        model: ScriptedToolModel, tmp_path: Path, real_tasks: TaskRegistry) -> None:
    oracle = oracle_actions(real_tasks.get(TASK))
    model.load(oracle)
    start = time.monotonic()
    good = vf_eval(model, tmp_path / "oracle")
    oracle_s = time.monotonic() - start
    requests = list(model.requests)
    model.load(wrong_fix(TASK, real_tasks))
    start = time.monotonic()
    bad = vf_eval(model, tmp_path / "wrong")
    print(f"verifiers: vf-eval oracle {oracle_s:.1f} s, wrong fix {time.monotonic() - start:.1f} s")

    assert reward_of(good) >= 0.6, json.dumps(good)[:3000]
    assert reward_of(bad) < 0.2, json.dumps(bad)[:3000]
    for trace, verified in ((good, 1.0), (bad, 0.0)):
        rollout = trace["traces"][0]
        assert rollout["stop_condition"] == "episode_over"  # the episode ended the rollout
        assert rollout["metrics"]["fix_verified"] == verified

    # the model saw what an HTTP agent sees: instructions, incident, the five tools, observations
    first, outs = http_view(TASK, real_tasks, oracle)
    req = requests[0]
    texts = [m.get("content") if isinstance(m.get("content"), str) else
             "".join(p.get("text", "") for p in m.get("content") or []) for m in req["messages"]]
    assert first.instructions in texts[0]
    assert any(first.task_description.strip() in t and first.terminal_output.strip() in t for t in texts)
    tools = sorted(t["function"]["name"] for t in req["tools"])
    assert [t.rsplit("__", 1)[-1] for t in tools] == sorted(ACTION_TYPES), tools
    # each tool result the model got back is the observation an HTTP agent gets for that step
    # (the rollout stops at the episode's end: submit_fix's result never needs another turn)
    last = requests[-1]["messages"]
    tool_texts = [m.get("content") if isinstance(m.get("content"), str) else
                  "".join(p.get("text", "") for p in m.get("content") or [])
                  for m in last if m["role"] == "tool"]
    assert len(requests) == len(oracle) and len(tool_texts) == len(oracle) - 1
    for seen, http in zip(tool_texts, outs, strict=False):
        assert http.strip()[:2000] in seen
