"""The framework floor for bench/http_ws_throughput.py and bench/realistic_mix.py: FastAPI
answering /reset and /step with fixed bodies the size of this server's real replies, and a
``/ws`` answering every message with the same step body in an observation frame (same framework
and WebSocket stack, no environment work).

    uvicorn bench.floor_app:app --port 8001
"""

from __future__ import annotations

import sys
from pathlib import Path

from fastapi import FastAPI, Request, Response, WebSocket, WebSocketDisconnect

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sandbox_env.actions import parse_action  # noqa: E402
from sandbox_env.environment import TriageEnvironment  # noqa: E402
from sandbox_env.models import StepResult  # noqa: E402
from sandbox_env.sandbox.mock import MockSandbox  # noqa: E402
from sandbox_env.suite.tasks import TaskRegistry  # noqa: E402

TASK = "oom_graph_leak"


def _replies() -> tuple[bytes, bytes]:
    """A real reset reply and a real read_file step reply, serialised once."""
    env = TriageEnvironment(TaskRegistry(), MockSandbox())
    first = env.reset(task=TASK, episode_id="floor", compact=True)
    step = env.step(parse_action({"action_type": "read_file", "filename": "train.py"}))
    replies = (StepResult(observation=first, reward=0.0, done=False, episode_id="floor"),
               StepResult(observation=step, reward=step.reward, done=False, episode_id="floor"))
    return replies[0].model_dump_json().encode(), replies[1].model_dump_json().encode()


RESET_BODY, STEP_BODY = _replies()
app = FastAPI()


@app.post("/reset")
async def reset(request: Request) -> Response:
    await request.body()
    return Response(RESET_BODY, media_type="application/json")


@app.post("/step")
async def step(request: Request) -> Response:
    await request.body()
    return Response(STEP_BODY, media_type="application/json")


WS_REPLY = '{"type":"observation","data":' + STEP_BODY.decode() + "}"


@app.websocket("/ws")
async def ws(socket: WebSocket) -> None:
    await socket.accept()
    try:
        while True:
            await socket.receive_text()
            await socket.send_text(WS_REPLY)
    except WebSocketDisconnect:
        pass
