"""Baseline agent end to end (sandbox_env.agent.loop and .run): a real sandbox-env server (mock mode)
and a local OpenAI-compatible chat server with scripted replies; the episode loop and the entry points.

The parts have their own tests: test_agent_replies, test_agent_prompts, test_agent_config,
test_agent_model_client and test_agent_loop (the loop against in-memory fakes)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from openai import OpenAI

from sandbox_env.agent import (
    AgentConfig,
    EpisodeResult,
    RunSummary,
    action_label,
    parse_reply,
    run_episode,
)
from sandbox_env.cli import main as cli_main
from sandbox_env.client import TriageClient
from sandbox_env.suite.oracle import oracle_actions
from sandbox_env.suite.tasks import TaskRegistry

from .conftest import ROOT, ThreadedServer, free_port, start_server

START_RE = re.compile(r"^\[START\] task=(\S+) env=sandbox-env model=(\S+)$")
STEP_RE = re.compile(r"^\[STEP\] step=(\d+) action=(\S.*?) reward=(-?\d+\.\d{2}) "
                     r"done=(true|false) error=(null|\S.*)$")
END_RE = re.compile(r"^\[END\] success=(true|false) steps=(\d+) score=(\d\.\d{3}) "
                    r"rewards=((?:-?\d+\.\d{2})(?:,-?\d+\.\d{2})*)?$")
MALFORMED = ("The validation loop keeps the autograd graph alive. I will wrap it in no_grad "
             "and detach the accumulated loss next.")


# --------------------------------------------------------------------------- a scripted model
class ScriptedLLM:
    """POST /v1/chat/completions in the real OpenAI response shape, replies from a queue.

    A queued int is answered as that HTTP error status. Every request body is recorded.
    An exhausted script answers 400 (not retried by the agent), so a test fails fast.
    """

    def __init__(self) -> None:
        self.script: deque[str | int] = deque()
        self.requests: list[dict[str, Any]] = []
        self.exhausted = False
        self._lock = threading.Lock()
        app = FastAPI()

        @app.post("/v1/chat/completions")
        async def chat(request: Request) -> JSONResponse:
            body = await request.json()
            with self._lock:
                self.requests.append(body)
                item = self.script.popleft() if self.script else None
                self.exhausted |= item is None
            if item is None or isinstance(item, int):
                status = 400 if item is None else item
                msg = "script exhausted" if item is None else f"scripted error {item}"
                return JSONResponse({"error": {"message": msg, "type": "server_error", "param": None,
                                               "code": None}}, status_code=status)
            n = len(self.requests)
            prompt_tokens = sum(len(m.get("content") or "") for m in body["messages"]) // 4
            return JSONResponse({
                "id": f"chatcmpl-scripted-{n}", "object": "chat.completion", "created": int(time.time()),
                "model": body["model"], "system_fingerprint": None,
                "choices": [{"index": 0, "logprobs": None, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": item, "refusal": None}}],
                "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": len(item) // 4,
                          "total_tokens": prompt_tokens + len(item) // 4},
            })

        self.http = ThreadedServer(app)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http.port}/v1"

    def load(self, replies: list[str | int]) -> None:
        with self._lock:
            self.script = deque(replies)
            self.requests = []
            self.exhausted = False

    def prompt_text(self, i: int) -> str:
        return "\n".join(m.get("content") or "" for m in self.requests[i]["messages"])

    def start(self) -> ScriptedLLM:
        self.http.start()
        return self

    def stop(self) -> None:
        self.http.stop()


@pytest.fixture(scope="module")
def llm() -> Iterator[ScriptedLLM]:
    server = ScriptedLLM().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def env_url() -> Iterator[str]:
    proc, url = start_server(ROOT / "task_repos", "mock")
    yield url
    proc.terminate()
    proc.wait(timeout=10)


def make_cfg(llm: ScriptedLLM, env_url: str, **kw: Any) -> AgentConfig:
    return AgentConfig(api_base_url=llm.url, model="scripted-model", api_key="test-key",
                       env_url=env_url, retry_backoff_s=0.01, health_timeout_s=10, **kw)


def play(llm: ScriptedLLM, env_url: str, task: str, replies: list[str | int], *, close: bool = True,
         sleep: Callable[[float], None] = time.sleep, **cfg_kw: Any,
         ) -> tuple[EpisodeResult, list[str], TriageClient]:
    llm.load(replies)
    cfg = make_cfg(llm, env_url, **cfg_kw)
    lines: list[str] = []
    client = TriageClient(env_url)
    oai = OpenAI(base_url=cfg.api_base_url, api_key="test-key", max_retries=0, timeout=30)
    res = run_episode(client, oai, task, cfg, emit=lines.append, close=close, sleep=sleep)
    return res, lines, client


# --------------------------------------------------------------------------- reply styles
def _literal_newlines(s: str) -> str:
    """JSON as models often write it: real newlines inside strings (escaped backslashes kept)."""
    return re.sub(r"(?<!\\)((?:\\\\)*)\\n", lambda m: m.group(1) + "\n", s)


STYLES: list[Callable[[dict[str, Any]], str]] = [
    lambda a: f"I'll start by reproducing the failure.\n```json\n{json.dumps(a, indent=2)}\n```",
    json.dumps,
    lambda a: json.dumps(a) + "\n\nThis should tell us where the memory goes.",
    lambda a: "Next action:\n" + json.dumps({"action": a}) + "\nLet me know what it prints.",
    lambda a: f"```\n{json.dumps({'thought': 'check the code path', **a})}\n```",
    lambda a: "Applying the fix:\n```json\n" + _literal_newlines(json.dumps(a)) + "\n```\nDone.",
]


def styled(actions: list[dict[str, Any]]) -> list[str | int]:
    return [STYLES[i % len(STYLES)](a) for i, a in enumerate(actions)]


def parse_lines(lines: list[str]) -> tuple[re.Match[str], list[re.Match[str]], re.Match[str]]:
    """The exact shape of an episode's log: one START, STEP lines numbered 1..n, one END."""
    start, end = START_RE.match(lines[0]), END_RE.match(lines[-1])
    steps = [STEP_RE.match(ln) for ln in lines[1:-1]]
    assert start and end and all(steps), lines
    assert [int(m.group(1)) for m in steps] == list(range(1, len(steps) + 1))  # type: ignore[union-attr]
    assert int(end.group(2)) == len(steps)
    rewards = end.group(4).split(",") if end.group(4) else []
    assert rewards == [m.group(3) for m in steps]  # type: ignore[union-attr]
    return start, steps, end  # type: ignore[return-value]


# --------------------------------------------------------------------------- end to end
def test_oracle_episode_with_one_malformed_reply(llm: ScriptedLLM, env_url: str,
                                                 real_tasks: TaskRegistry) -> None:
    task = real_tasks.get("oom_graph_leak")
    actions = oracle_actions(task)
    replies = styled(actions)
    k = 2  # the model rambles instead of acting before its first edit
    replies.insert(k, MALFORMED)
    res, lines, _ = play(llm, env_url, task.id, replies)

    assert not llm.exhausted and len(llm.requests) == len(actions) + 1
    assert res.success and res.done and res.score >= 0.9, res
    assert res.env_steps == res.steps == len(actions) and res.failed_turns == 0

    start, steps, end = parse_lines(lines)
    assert start.groups() == (task.id, "scripted-model")
    assert [m.group(2) for m in steps] == [action_label(parse_reply(json.dumps(a)).action) for a in actions]
    assert steps[0].group(2) == "execute_bash(python train.py)" and steps[1].group(2) == "read_file(train.py)"
    assert steps[-1].group(2).startswith("submit_fix(") and steps[-1].group(4) == "true"
    assert all(m.group(4) == "false" and m.group(5) == "null" for m in steps[:-1])
    assert end.group(1) == "true" and float(end.group(3)) == round(res.score, 3) >= 0.9

    # the corrective retry: same context + the malformed reply + a message saying what was wrong
    bad, retry = llm.requests[k], llm.requests[k + 1]
    assert retry["messages"][:-2] == bad["messages"]
    assert retry["messages"][-2] == {"role": "assistant", "content": MALFORMED}
    correction = retry["messages"][-1]
    assert correction["role"] == "user"
    assert correction["content"].startswith("Your reply could not be used: no JSON object found")
    assert '{"action_type": "edit_file"' in correction["content"]
    # ... and it is not kept in the history afterwards
    assert all(MALFORMED not in llm.prompt_text(i) for i in range(k + 2, len(llm.requests)))
    assert all(r["model"] == "scripted-model" and r["temperature"] == 0 for r in llm.requests)

    # compact prompts: the first turn lists files without contents; unread files never appear
    files = task.repo_files()
    first = llm.prompt_text(0)
    assert task.incident_report.strip()[:200] in first and "Run command: python train.py" in first
    assert all(name in first for name in files) and not any(text in first for text in files.values())
    read = {a["filename"] for a in actions if a["action_type"] in ("read_file", "edit_file")}
    for i in range(len(llm.requests)):
        shown = {name for name, text in files.items() if text in llm.prompt_text(i)}
        assert shown <= read, (i, shown)
    assert files["train.py"] in llm.prompt_text(2)  # the file read at step 2 is shown after it


def test_long_episode_prompt_stays_bounded(llm: ScriptedLLM, env_url: str,
                                           real_tasks: TaskRegistry) -> None:
    task = real_tasks.get("ddp_gradient_hang")
    files = task.repo_files()
    names = sorted(files)
    reads = [names[i % len(names)] for i in range(task.max_steps)]  # 16 reads, the budget runs out
    replies = styled([{"action_type": "read_file", "filename": f} for f in reads])
    res, lines, _ = play(llm, env_url, task.id, replies, history_window=2)

    assert not llm.exhausted and len(llm.requests) == task.max_steps
    _, steps, end = parse_lines(lines)
    assert len(steps) == task.max_steps and steps[-1].group(4) == "true"
    assert end.group(1) == "false" and end.group(3) == "0.001" and res.score == 0.001
    assert any(float(m.group(3)) < 0 for m in steps)  # repeated identical reads are penalised
    # exactly the files read in the last two turns are shown verbatim, none older
    for i in range(len(llm.requests)):
        shown = {name for name, text in files.items() if text in llm.prompt_text(i)}
        assert shown == set(reads[max(0, i - 2):i]), (i, shown)
    # older turns survive as one-line summaries
    assert "turn 1: read_file(config.py)" in llm.prompt_text(len(llm.requests) - 1)
    sizes = [len(llm.prompt_text(i)) for i in range(len(llm.requests))]
    everything = sum(len(files[f]) for f in reads)
    assert max(sizes) < 16_000 < everything, sizes
    assert max(sizes[4:]) - min(sizes[4:]) < 4_000, sizes  # flat once the window is full


def test_doubly_malformed_turn_takes_no_env_step(llm: ScriptedLLM, env_url: str,
                                                 real_tasks: TaskRegistry) -> None:
    task = real_tasks.get("oom_graph_leak")
    actions = oracle_actions(task)
    replies = styled(actions)
    replies[1:1] = ['{"action_type": "read", "file": "train.py"}', '{"action_type": "read_file"}']
    res, lines, client = play(llm, env_url, task.id, replies, close=False)
    try:
        assert client.state().step_count == len(actions)  # the failed turn used no env step
    finally:
        client.close_episode()

    assert res.success and res.score >= 0.9 and res.failed_turns == 1
    assert res.env_steps == len(actions) and res.steps == len(actions) + 1
    _, steps, end = parse_lines(lines)
    bad = steps[1]
    assert bad.group(2) == "invalid" and bad.group(3) == "0.00" and bad.group(4) == "false"
    assert bad.group(5) == ("unusable reply after one corrective retry: read_file is missing filename; "
                            'expected {"action_type": "read_file", "filename": "train.py"}')
    assert llm.requests[2]["messages"][-1]["content"].startswith(
        "Your reply could not be used: unknown action_type 'read'")
    # the next turn is fresh: the failure is stated, the retry pair is not replayed
    fresh = llm.requests[3]["messages"]
    assert "No action was taken" in fresh[-1]["content"]
    assert len(fresh) == len(llm.requests[1]["messages"]) + 2
    assert "Step 2/12" in llm.prompt_text(4)  # the next real action is env step 2, not 3
    assert end.group(1) == "true"


def test_consecutive_failures_end_the_episode_honestly(llm: ScriptedLLM, env_url: str) -> None:
    res, lines, client = play(llm, env_url, "fsdp_collective_deadlock", ["I am not sure."] * 6,
                              close=False, max_consecutive_failures=3)
    try:
        st = client.state()
        assert st.step_count == 0 and not st.done
    finally:
        client.close_episode()
    assert not llm.exhausted and len(llm.requests) == 6
    assert not res.success and not res.done and res.score == 0.001 and res.env_steps == 0
    assert res.error == "3 unusable replies in a row; episode stopped"
    steps = parse_lines(lines)[1]
    assert [m.group(2) for m in steps] == ["invalid"] * 3
    assert lines[-1] == "[END] success=false steps=3 score=0.001 rewards=0.00,0.00,0.00"


def test_llm_server_errors_are_retried_with_backoff(llm: ScriptedLLM, env_url: str,
                                                    real_tasks: TaskRegistry) -> None:
    actions = oracle_actions(real_tasks.get("compile_graph_break"))
    delays: list[float] = []
    res, lines, _ = play(llm, env_url, "compile_graph_break", [503, 500, *styled(actions)],
                         sleep=delays.append, llm_retries=3)
    assert res.success and res.score >= 0.9 and delays == [0.01, 0.02]
    assert llm.requests[0] == llm.requests[1] == llm.requests[2]
    assert len(lines) == len(actions) + 2

    res, lines, _ = play(llm, env_url, "compile_graph_break", [500, 502, 500], sleep=delays.append,
                         llm_retries=2)
    assert not res.success and res.score == 0.001 and "after 3 attempts" in (res.error or "")
    assert lines[-1] == "[END] success=false steps=0 score=0.001 rewards="


# --------------------------------------------------------------------------- entry points
def _agent_env(llm: ScriptedLLM, env_url: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("HF_TOKEN", "OPENAI_API_KEY", "TASKS", "SEED", "API_BASE_URL", "MODEL_NAME")}
    env.update({"API_BASE_URL": llm.url, "MODEL_NAME": "scripted-model", "ENV_URL": env_url,
                "PYTHONUNBUFFERED": "1"})
    env.update(extra)
    return env


def run_inference(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "inference.py"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env=env, check=False)


def test_inference_py_runs_every_task(llm: ScriptedLLM, env_url: str, real_tasks: TaskRegistry) -> None:
    ids = [t["id"] for t in TriageClient(env_url).tasks()]
    assert sorted(ids) == sorted(real_tasks.ids())
    llm.load([json.dumps(a) for tid in ids for a in oracle_actions(real_tasks.get(tid))])
    proc = run_inference(_agent_env(llm, env_url, HF_TOKEN="test-key"))
    assert proc.returncode == 0, proc.stderr
    assert not llm.exhausted
    out = proc.stdout.splitlines()
    assert [m.group(1) for m in map(START_RE.match, out) if m] == ids
    episodes: list[list[str]] = []
    for line in out:  # nothing but the three kinds of lines, in episode order
        if line.startswith("[START]"):
            episodes.append([])
        episodes[-1].append(line)
    for tid, ep in zip(ids, episodes, strict=True):
        _, steps, end = parse_lines(ep)
        assert end.group(1) == "true" and float(end.group(3)) >= 0.9
        assert len(steps) == len(oracle_actions(real_tasks.get(tid))), tid
    assert "mean_score=" in proc.stderr and f"verified={len(ids)}/{len(ids)}" in proc.stderr


def test_inference_py_configuration_errors(llm: ScriptedLLM, env_url: str) -> None:
    no_key = run_inference(_agent_env(llm, env_url))
    assert no_key.returncode == 2 and no_key.stdout == ""
    assert "no API key: set HF_TOKEN (or OPENAI_API_KEY)" in no_key.stderr
    unknown = run_inference(_agent_env(llm, env_url, OPENAI_API_KEY="k", TASKS="nope"))
    assert unknown.returncode == 2 and "unknown task(s) nope" in unknown.stderr
    assert "oom_graph_leak" in unknown.stderr and unknown.stdout == ""


def test_cli_agent_subcommand(llm: ScriptedLLM, env_url: str, *, real_tasks: TaskRegistry,
                              tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                              capsys: pytest.CaptureFixture[str]) -> None:
    for var in ("OPENAI_API_KEY", "TASKS", "SEED", "API_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HF_TOKEN", "test-key")
    monkeypatch.setenv("MODEL_NAME", "env-model")
    llm.load([json.dumps(a) for a in oracle_actions(real_tasks.get("fsdp_collective_deadlock"))])
    out = tmp_path / "run.json"
    rc = cli_main(["agent", "--env-url", env_url, "--api-base-url", llm.url,
                   "--tasks", "fsdp_collective_deadlock", "--max-retries", "1", "--json-out", str(out)])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    lines = captured.out.splitlines()
    assert lines[0] == "[START] task=fsdp_collective_deadlock env=sandbox-env model=env-model"
    assert parse_lines(lines)[2].group(1) == "true"
    summary = RunSummary.model_validate_json(out.read_text())
    assert summary.verified == 1 and summary.mean_score >= 0.9 and summary.model == "env-model"
    assert all(r["model"] == "env-model" for r in llm.requests)

    port = free_port()  # nothing listens there: the agent waits for /health, then gives up
    rc = cli_main(["agent", "--env-url", f"http://127.0.0.1:{port}", "--health-timeout", "0.5"])
    assert rc == 1 and "did not answer /health" in capsys.readouterr().err
