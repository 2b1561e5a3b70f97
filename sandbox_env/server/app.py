"""FastAPI app: HTTP episodes (reset / step / state / close), health, schema and tasks."""

from __future__ import annotations

import json
import logging
import time
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Header, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .. import __version__
from ..environment import EpisodeDone, InvalidAction, TriageEnvironment, parse_action
from ..models import ACTION_ADAPTER, Observation, State, StepResult
from ..rubrics import ExplanationJudge, default_judge
from ..sandbox import Sandbox, docker_available
from ..tasks import TaskRegistry, UnknownTask
from .sessions import SessionError, SessionManager

log = logging.getLogger(__name__)


class ServerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max_sessions: int = Field(default=64, ge=1)
    idle_timeout_s: float = Field(default=900.0, gt=0)
    max_body_bytes: int = Field(default=1_000_000, ge=1024)


class ResetRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    task: str | None = Field(default=None, max_length=200, description="task id; random by seed if omitted")
    seed: int | None = None
    episode_id: str | None = Field(default=None, min_length=1, max_length=128)


class CloseRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    episode_id: str = Field(min_length=1, max_length=128)


class ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        self.status, self.message = status, message


class BodyLimit:
    """ASGI middleware: refuse request bodies over ``limit`` bytes with 413 (chunked too)."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await _send_json(send, 413, {"detail": f"request body over {self.limit} bytes"})
            return
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            msg = await receive()
            if msg["type"] == "http.request":
                seen += len(msg.get("body", b""))
                if seen > self.limit:
                    raise ApiError(413, f"request body over {self.limit} bytes")
            return msg

        await self.app(scope, limited, send)


async def _send_json(send: Send, status: int, body: dict[str, Any]) -> None:
    raw = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(raw)).encode())]})
    await send({"type": "http.response.body", "body": raw})


def create_app(tasks: TaskRegistry, sandbox: Sandbox, config: ServerConfig | None = None,
               judge: ExplanationJudge | None = None) -> FastAPI:
    """Build the app around one task registry and one sandbox shared by its sessions."""
    cfg = config or ServerConfig()
    judge = judge or default_judge()
    sessions = SessionManager(lambda: TriageEnvironment(tasks, sandbox, judge, owns_sandbox=False),
                              cfg.max_sessions, cfg.idle_timeout_s)
    started = time.time()

    @asynccontextmanager
    async def lifespan(_: FastAPI):  # type: ignore[no-untyped-def]
        yield
        sessions.close_all()
        sandbox.close()

    app = FastAPI(title="sandbox-env", version=__version__, lifespan=lifespan,
                  description="Real-execution PyTorch debugging episodes for LLM agents.")
    app.add_middleware(BodyLimit, limit=cfg.max_body_bytes)
    app.state.sessions = sessions
    app.state.sandbox = sandbox

    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse({"detail": exc.message}, status_code=exc.status)

    @app.exception_handler(SessionError)
    async def _session_error(_: Request, exc: SessionError) -> JSONResponse:
        return JSONResponse({"detail": exc.message}, status_code=exc.status)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        msgs = [f"{'.'.join(str(p) for p in e['loc'] if p != 'body') or 'body'}: {e['msg']}"
                for e in exc.errors()]
        return JSONResponse({"detail": "invalid request: " + "; ".join(msgs[:8])}, status_code=422)

    async def json_body(request: Request) -> dict[str, Any]:
        raw = await request.body()
        if not raw.strip():
            return {}
        try:
            data = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ApiError(400, f"malformed JSON: {exc}") from None
        if not isinstance(data, dict):
            raise ApiError(422, "the request body must be a JSON object")
        return data

    @app.post("/reset", response_model=StepResult,
              openapi_extra={"requestBody": {"required": False, "content": {"application/json": {
                  "schema": ResetRequest.model_json_schema()}}}})
    async def reset(request: Request) -> StepResult:
        try:
            body = ResetRequest.model_validate(await json_body(request))
        except ValidationError as exc:
            raise ApiError(422, "invalid request: " + "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in exc.errors())) from None
        if body.task is not None:
            try:
                tasks.get(body.task)
            except UnknownTask as exc:
                raise ApiError(404, str(exc)) from None
        session = sessions.open(body.episode_id)
        async with session.lock:
            obs = await run_in_threadpool(session.env.reset, seed=body.seed,
                                          episode_id=session.episode_id, task=body.task)
            session.touch()
        return StepResult(observation=obs, reward=obs.reward, done=obs.done,
                          episode_id=session.episode_id)

    @app.post("/step", response_model=StepResult,
              openapi_extra={"requestBody": {"required": True, "content": {"application/json": {
                  "schema": {"type": "object", "description":
                             "An action, flat ({action_type, ...}) or wrapped ({action: {...}}), "
                             "plus optional episode_id (or the X-Episode-Id header)."}}}}})
    async def step(request: Request,
                   x_episode_id: str | None = Header(default=None, max_length=128)) -> StepResult:
        body = await json_body(request)
        episode_id = body.pop("episode_id", None) or x_episode_id
        if episode_id is not None and not isinstance(episode_id, str):
            raise ApiError(422, "episode_id must be a string")
        raw_action = body["action"] if "action" in body else body
        try:
            action = parse_action(raw_action)
        except InvalidAction as exc:
            raise ApiError(422, str(exc)) from None
        session = sessions.get(episode_id)
        async with session.lock:
            try:
                obs = await run_in_threadpool(session.env.step, action)
            except EpisodeDone as exc:
                raise ApiError(409, str(exc)) from None
            session.touch()
        return StepResult(observation=obs, reward=obs.reward, done=obs.done,
                          episode_id=session.episode_id)

    @app.get("/state", response_model=State)
    async def state(episode_id: str | None = Query(default=None, max_length=128),
                    x_episode_id: str | None = Header(default=None, max_length=128)) -> State:
        session = sessions.get(episode_id or x_episode_id)
        session.touch()
        return session.env.state

    @app.post("/close")
    async def close(body: CloseRequest) -> dict[str, Any]:
        if not sessions.close(body.episode_id):
            raise ApiError(404, f"unknown episode_id {body.episode_id!r}")
        return {"closed": body.episode_id}

    docker_probe: dict[str, Any] = {"at": -1e9, "value": (False, "")}

    async def docker_status() -> tuple[bool, str]:
        """Engine reachability, probed at most every 10 s (health is polled often)."""
        if time.monotonic() - docker_probe["at"] > 10:
            docker_probe["value"] = await run_in_threadpool(docker_available)
            docker_probe["at"] = time.monotonic()
        return docker_probe["value"]

    @app.get("/health")
    async def health() -> dict[str, Any]:
        ok, why = await docker_status()
        return {"status": "ok", "mode": sandbox.mode, "docker_available": ok,
                "docker_detail": why, "task_count": len(tasks),
                "active_sessions": len(sessions), "max_sessions": cfg.max_sessions,
                "version": __version__, "uptime_s": round(time.time() - started, 1)}

    @app.get("/schema")
    async def schema() -> dict[str, Any]:
        return {"action": ACTION_ADAPTER.json_schema(),
                "observation": Observation.model_json_schema(),
                "state": State.model_json_schema()}

    @app.get("/tasks")
    async def list_tasks() -> list[dict[str, Any]]:
        return [{"id": t.id, "title": t.title, "difficulty": t.difficulty,
                 "max_steps": t.max_steps, "run_command": t.run_command,
                 "files": sorted(t.repo_files())} for t in tasks]

    return app
