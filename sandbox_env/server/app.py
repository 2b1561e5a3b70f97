"""FastAPI app: HTTP episodes (reset / step / state / close), /ws, /mcp, health, metadata, schema
(POST /reset and /step answered ahead of FastAPI's routing by fast.FastRoutes)."""

from __future__ import annotations

import asyncio
import logging
import time
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Header, Query, Request, WebSocket
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from .. import __version__
from ..actions import validation_message
from ..environment import TriageEnvironment
from ..errors import EnvError, InvalidRequest, UnknownEpisode
from ..models import ACTION_ADAPTER, Observation, State, StepResult
from ..rubrics import ExplanationJudge, default_judge
from ..sandbox import Sandbox
from ..sandbox import find as find_backend
from ..sandbox.registry import selection
from ..suite.tasks import TaskRegistry
from .fast import EpisodeRoutes, FastRoutes, error_reply
from .limits import BodyLimit
from .mcp import ACTION_TOOLS, McpHandler
from .mcp_http import AsgiReply, McpHttp
from .service import EpisodeService, ResetParams
from .sessions import SessionManager
from .wire import (
    CloseReply,
    CloseRequest,
    HealthReply,
    JsonRpcReply,
    MetadataReply,
    SchemaReply,
    TaskInfo,
    errors,
    step_body_schema,
)
from .ws import WebSocketEpisode

log = logging.getLogger(__name__)


# live episodes a server admits when not told: a mock episode is a dict and a few memos (~73 KiB
# measured, bench/many_sessions.py: 1,000 /ws episodes on 2 cores, p99 160 ms); a real episode
# runs containers or namespaces, which a small machine can only run a few dozen of at once
DEFAULT_MAX_SESSIONS = {"mock": 1024}
REAL_MAX_SESSIONS = 64
MAX_THREADS = 64  # blocking work (a run, a verification, a classification) in flight at once


def default_max_sessions(mode: str) -> int:
    return DEFAULT_MAX_SESSIONS.get(mode, REAL_MAX_SESSIONS)


class ServerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max_sessions: int | None = Field(default=None, ge=1)  # None: default_max_sessions(mode)
    idle_timeout_s: float = Field(default=900.0, gt=0)
    max_body_bytes: int = Field(default=1_000_000, ge=1024)


def _json(model: BaseModel) -> Response:
    """Serialise a reply with pydantic-core directly (no re-validation, no jsonable_encoder)."""
    return Response(model.model_dump_json(), media_type="application/json")


DESCRIPTION = ("Real-execution PyTorch debugging episodes for LLM agents: each task is a small "
               "training project that really fails on CPU; the agent reads, edits and runs code "
               "and submits a fix that hidden behavioural checks verify.")


EPISODE_HEADER = {"parameters": [{"name": "X-Episode-Id", "in": "header", "required": False,
                                  "schema": {"type": "string", "maxLength": 128}}]}


class App(FastAPI):
    """FastAPI, with POST /reset and /step answered by ``fast`` (fast.FastRoutes) when set, as
    long as no middleware was added after it was (a deployment's middleware sees every route)."""

    fast: FastRoutes | None = None
    _fast_middleware = 0  # len(user_middleware) when ``fast`` was set

    def use_fast(self, fast: FastRoutes) -> None:
        self.fast, self._fast_middleware = fast, len(self.user_middleware)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if (self.fast is not None and len(self.user_middleware) == self._fast_middleware
                and self.fast.handles(scope)):
            await self.fast.app(scope, receive, send)
            return
        await super().__call__(scope, receive, send)


@dataclass
class _Parts:
    """What the routes share: the registry, the sandbox, the sessions and the faces over them."""

    tasks: TaskRegistry
    sandbox: Sandbox
    cfg: ServerConfig
    sessions: SessionManager
    service: EpisodeService
    mcp: McpHandler
    mcp_http: McpHttp
    websockets: WebSocketEpisode
    started: float = field(default_factory=time.time)


def create_app(tasks: TaskRegistry, sandbox: Sandbox, config: ServerConfig | None = None,
               judge: ExplanationJudge | None = None, *, fast: bool = True) -> App:
    """Build the app around one task registry and one sandbox shared by its sessions
    (``fast=False``: /reset and /step through FastAPI's routing, which answers the same)."""
    cfg = config or ServerConfig()
    max_sessions = cfg.max_sessions or default_max_sessions(sandbox.mode)
    cfg = cfg.model_copy(update={"max_sessions": max_sessions})
    judge = judge or default_judge()
    sessions = SessionManager(lambda: TriageEnvironment(tasks, sandbox, judge),
                              max_sessions, cfg.idle_timeout_s)
    service = EpisodeService(tasks, sessions, max_threads=min(max_sessions, MAX_THREADS))
    mcp = McpHandler(service)
    parts = _Parts(tasks, sandbox, cfg, sessions, service, mcp,
                   McpHttp(service, cfg.idle_timeout_s, max_sessions),
                   WebSocketEpisode(service, mcp, cfg.idle_timeout_s, cfg.max_body_bytes))

    @asynccontextmanager
    async def lifespan(_: FastAPI):  # type: ignore[no-untyped-def]
        reaper = asyncio.create_task(sessions.reap_forever())
        async with parts.mcp_http.manager.run():  # the SDK's MCP sessions live in its task group
            yield
        reaper.cancel()
        with suppress(asyncio.CancelledError):
            await reaper
        sessions.close_all()
        sandbox.close()

    app = App(title="sandbox-env", version=__version__, lifespan=lifespan, description=DESCRIPTION)
    step_schema, step_defs = step_body_schema()

    def openapi() -> dict[str, Any]:
        """FastAPI's schema plus the component schemas the hand-written /step body refers to."""
        if app.openapi_schema is None:
            schema = FastAPI.openapi(app)
            schema.setdefault("components", {}).setdefault("schemas", {}).update(step_defs)
        return app.openapi_schema  # type: ignore[return-value]

    app.openapi = openapi  # type: ignore[method-assign]
    app.add_middleware(BodyLimit, limit=cfg.max_body_bytes)
    app.state.sessions = sessions
    app.state.sandbox = sandbox
    _error_handlers(app)
    routes = EpisodeRoutes(sessions, service)
    _episode_routes(app, parts, routes, step_schema)
    if fast:
        app.use_fast(FastRoutes(routes, cfg.max_body_bytes))
    _mcp_routes(app, parts)
    _info_routes(app, parts)
    return app


def _error_handlers(app: FastAPI) -> None:
    """Every error a client or an agent causes answers in one shape: {detail, code}."""
    @app.exception_handler(EnvError)
    async def _episode_error(_: Request, exc: EnvError) -> JSONResponse:
        return error_reply(exc)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        """Framework errors (unparsable body, unknown route, wrong method) in the same shape."""
        codes = {400: "INVALID_JSON", 404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED"}
        code = codes.get(exc.status_code, "HTTP_ERROR")
        return JSONResponse({"detail": str(exc.detail), "code": code}, status_code=exc.status_code,
                            headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors_ = [{**e, "loc": [p for p in e["loc"] if p != "body"]} for e in exc.errors()]
        return JSONResponse({"detail": validation_message(errors_), "code": InvalidRequest.code},
                            status_code=InvalidRequest("").status)


def _episode_routes(app: FastAPI, p: _Parts, routes: EpisodeRoutes, step_schema: dict[str, Any]) -> None:
    """/reset, /step (their logic: fast.EpisodeRoutes), /state, /close and /ws."""
    sessions, service, websockets = p.sessions, p.service, p.websockets

    def json_reply(raw: bytes) -> Response:
        return Response(raw, media_type="application/json")

    @app.post("/reset", response_model=StepResult, responses=errors(400, 404, 409, 413, 422, 503),
              openapi_extra={"requestBody": {"required": False, "content": {"application/json": {
                  "schema": ResetParams.model_json_schema()}}}})
    async def reset(request: Request) -> Response:
        return json_reply(await routes.reset(await request.body()))

    @app.post("/step", response_model=StepResult, responses=errors(400, 404, 409, 413, 422, 503),
              openapi_extra={**EPISODE_HEADER, "requestBody": {"required": True, "content": {
                  "application/json": {"schema": step_schema}}}})
    async def step(request: Request) -> Response:
        # No FastAPI parameters: dependency solving would cost more than the step itself.
        return json_reply(await routes.step(await request.body(), request.headers.get("x-episode-id")))

    @app.get("/state", response_model=State, responses=errors(404, 409, 422))
    async def state(episode_id: str | None = Query(default=None, max_length=128),
                    x_episode_id: str | None = Header(default=None, max_length=128)) -> Response:
        return _json(service.state(sessions.get(episode_id or x_episode_id)))

    @app.post("/close", response_model=CloseReply, responses=errors(400, 404, 413, 422))
    async def close(body: CloseRequest) -> CloseReply:
        if not await sessions.close(body.episode_id):
            raise UnknownEpisode(f"unknown episode_id {body.episode_id!r}")
        return CloseReply(closed=body.episode_id)

    @app.websocket("/ws")
    async def ws(websocket: WebSocket) -> None:
        await websockets.serve(websocket)


def _mcp_routes(app: FastAPI, p: _Parts) -> None:
    """/mcp: streamable HTTP MCP (the SDK) and OpenEnv's session-less JSON-RPC."""
    mcp, mcp_http = p.mcp, p.mcp_http

    async def mcp_asgi(scope: Any, receive: Any, send: Any) -> None:
        await mcp_http.handle(scope, receive, send, mcp)

    @app.post("/mcp", response_model=JsonRpcReply,
              responses={202: {"description": "a notification: no reply"}, **errors(413, 422)},
              openapi_extra={**EPISODE_HEADER, "requestBody": {"required": False, "content": {
                  "application/json": {"schema": {"description":
                      "MCP streamable HTTP (initialize with Accept: application/json, "
                      "text/event-stream issues an Mcp-Session-Id; then tools/list, tools/call "
                      "start_episode and the actions), or, without Mcp-Session-Id, OpenEnv's "
                      "JSON-RPC: initialize, tools/list, tools/call {name, arguments, session_id}, "
                      "openenv/session/create|close. Any JSON: invalid requests get JSON-RPC error "
                      "replies."}}}}})
    async def mcp_endpoint() -> Response:
        return AsgiReply(mcp_asgi)

    @app.delete("/mcp", responses={200: {"description": "the session and its episode are closed"},
                                   400: {"description": "no Mcp-Session-Id (JSON-RPC error body)"},
                                   404: {"description": "unknown or ended session (JSON-RPC error body)"}},
                openapi_extra={"parameters": [{"name": "Mcp-Session-Id", "in": "header", "required": True,
                                               "schema": {"type": "string"}}]})
    async def mcp_end_session() -> Response:
        """End an MCP session (the ``Mcp-Session-Id`` header) and close its episode."""
        return AsgiReply(mcp_asgi)

    @app.api_route("/mcp", methods=["GET", "PUT", "PATCH", "OPTIONS", "TRACE"], include_in_schema=False)
    async def mcp_other_methods() -> Response:
        """405, naming the methods /mcp has (GET too: no server-initiated event stream is offered)."""
        return JSONResponse({"detail": "Method Not Allowed", "code": "METHOD_NOT_ALLOWED"},
                            status_code=405, headers={"allow": "POST, DELETE"})


def _info_routes(app: FastAPI, p: _Parts) -> None:
    """/health, /metadata, /schema, /tasks."""
    tasks, sandbox, sessions, cfg, started = p.tasks, p.sandbox, p.sessions, p.cfg, p.started

    probes: dict[str, tuple[float, tuple[bool, str]]] = {}

    async def available(mode: str) -> tuple[bool, str]:
        """A registered backend's availability, probed at most every 2 s (health is polled often)."""
        b = find_backend(mode)
        if b is None:  # not a registered backend (a test double): nothing to probe
            return True, "not a registered backend"
        at, value = probes.get(mode, (-1e9, (False, "")))
        if time.monotonic() - at > 2:
            value = await run_in_threadpool(b.available)
            probes[mode] = (time.monotonic(), value)
        return value

    @app.get("/health", response_model=HealthReply)
    async def health() -> HealthReply:
        ok, why = await available("docker")  # the reply's docker_* fields, whatever the mode
        status = "healthy" if (await available(sandbox.mode))[0] else "degraded"
        probe = getattr(sandbox, "runtime_report", None)  # docker mode: probed once, then cached
        rt = await run_in_threadpool(probe) if probe else None
        return HealthReply(status=status, mode=sandbox.mode, mode_reason=selection(sandbox),
                           docker_available=ok,  # type: ignore[arg-type]
                           docker_detail=why, task_count=len(tasks),
                           active_sessions=len(sessions), max_sessions=cfg.max_sessions,
                           expired_sessions=sessions.expired, idle_timeout_s=cfg.idle_timeout_s,
                           version=__version__, uptime_s=round(time.time() - started, 1),
                           runtime=rt.name if rt else None,
                           runtime_version=rt.version if rt else None,
                           runtime_in_effect=rt.in_effect if rt else None)

    @app.get("/metadata", response_model=MetadataReply)
    async def metadata() -> MetadataReply:
        return MetadataReply(
            name="sandbox-env", description=DESCRIPTION, version=__version__,
            author="sandbox-env maintainers", mode=sandbox.mode,  # type: ignore[arg-type]
            actions=[t["name"] for t in ACTION_TOOLS], reward_range=(0.0, 1.0),
            tasks=[{"id": t.id, "title": t.title, "difficulty": t.difficulty} for t in tasks])  # type: ignore[misc]

    @app.get("/schema", response_model=SchemaReply)
    async def schema() -> SchemaReply:
        return SchemaReply(action=ACTION_ADAPTER.json_schema(), observation=Observation.model_json_schema(),
                           state=State.model_json_schema())

    @app.get("/tasks", response_model=list[TaskInfo])
    async def list_tasks() -> list[TaskInfo]:
        return [TaskInfo(id=t.id, title=t.title, difficulty=t.difficulty, max_steps=t.max_steps,
                         run_command=t.run_command, files=sorted(t.repo_files())) for t in tasks]
