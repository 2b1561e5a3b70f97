"""FastAPI app: HTTP episodes (reset / step / state / close), /ws, /mcp, health, metadata, schema."""

from __future__ import annotations

import asyncio
import ctypes
import json
import logging
import time
from contextlib import asynccontextmanager, suppress
from typing import Any

from fastapi import FastAPI, Header, Query, Request, WebSocket
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .. import __version__
from ..environment import TriageEnvironment
from ..errors import EnvError, InvalidJson, InvalidRequest, PayloadTooLarge, UnknownEpisode
from ..models import ACTION_ADAPTER, Observation, State, StepResult
from ..rubrics import ExplanationJudge, default_judge
from ..sandbox import Sandbox
from ..sandbox import find as find_backend
from ..tasks import TaskRegistry
from .mcp import ACTION_TOOLS, McpHandler
from .mcp_http import AsgiReply, McpHttp
from .service import EpisodeService, ResetParams, parse_reset
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


class ServerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max_sessions: int = Field(default=64, ge=1)
    idle_timeout_s: float = Field(default=900.0, gt=0)
    max_body_bytes: int = Field(default=1_000_000, ge=1024)


class BodyLimit:
    """ASGI middleware: refuse request bodies over ``limit`` bytes with 413 (chunked too).

    The client gets to read the 413: the body is drained (up to ``drain_limit`` bytes) before
    the reply, because a server that replies and closes while the client is still sending
    makes many client libraries (Python's urllib, requests) see a connection reset instead.
    Past ``drain_limit`` the reply is sent with ``connection: close`` and the connection dropped.
    """

    def __init__(self, app: ASGIApp, limit: int, drain_limit: int | None = None) -> None:
        self.app, self.limit = app, limit
        self.drain_limit = drain_limit if drain_limit is not None else max(16 * limit, 16 << 20)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await self._refuse(receive, send)
            return
        seen = 0
        refused = False

        async def limited() -> Message:
            nonlocal seen, refused
            msg = await receive()
            if msg["type"] == "http.request":
                seen += len(msg.get("body", b""))
                if seen > self.limit and not refused:
                    refused = True
                    if msg.get("more_body", False):
                        await self._drain(receive, self.drain_limit - seen)
                    raise PayloadTooLarge(f"request body over {self.limit} bytes")
            return msg

        await self.app(scope, limited, send)

    async def _refuse(self, receive: Receive, send: Send) -> None:
        complete = await self._drain(receive, self.drain_limit) >= 0
        await _send_json(send, 413, {"detail": f"request body over {self.limit} bytes",
                                     "code": "PAYLOAD_TOO_LARGE"}, close=not complete)

    @staticmethod
    async def _drain(receive: Receive, budget: int) -> int:
        """Read and drop the rest of the body; its size, or -1 if it ran past ``budget``."""
        total = 0
        while True:
            msg = await receive()
            if msg["type"] != "http.request":
                return -1
            total += len(msg.get("body", b""))
            if not msg.get("more_body", False):
                return total
            if total > budget:
                return -1


async def _send_json(send: Send, status: int, body: dict[str, Any], close: bool = False) -> None:
    raw = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(raw)).encode())]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": raw})


def limit_malloc_arenas(arenas: int = 2) -> None:
    """Cap glibc's malloc arenas for this process (like MALLOC_ARENA_MAX=2).

    Steps that wait on I/O run in a pool of worker threads; glibc gives each thread its own
    arena, and the server's RSS crept up by ~10 KB per episode under load (measured with
    bench/load.py: 84 -> 104 MB over 2300 episodes) while Python-level allocations stayed flat.
    With two arenas it stays flat (75-77 MB). No-op where glibc is absent.
    """
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-8, arenas)  # M_ARENA_MAX
    except (OSError, AttributeError):
        pass


def _json(model: BaseModel) -> Response:
    """Serialise a reply with pydantic-core directly (no re-validation, no jsonable_encoder)."""
    return Response(model.model_dump_json(), media_type="application/json")


DESCRIPTION = ("Real-execution PyTorch debugging episodes for LLM agents: each task is a small "
               "training project that really fails on CPU; the agent reads, edits and runs code "
               "and submits a fix that hidden behavioural checks verify.")


EPISODE_HEADER = {"parameters": [{"name": "X-Episode-Id", "in": "header", "required": False,
                                  "schema": {"type": "string", "maxLength": 128}}]}


def header_episode_id(request: Request) -> str | None:
    value = request.headers.get("x-episode-id")
    if value is not None and len(value) > 128:
        raise InvalidRequest("X-Episode-Id: at most 128 characters")
    return value


def create_app(tasks: TaskRegistry, sandbox: Sandbox, config: ServerConfig | None = None,
               judge: ExplanationJudge | None = None) -> FastAPI:
    """Build the app around one task registry and one sandbox shared by its sessions."""
    cfg = config or ServerConfig()
    judge = judge or default_judge()
    sessions = SessionManager(lambda: TriageEnvironment(tasks, sandbox, judge),
                              cfg.max_sessions, cfg.idle_timeout_s)
    service = EpisodeService(tasks, sessions, max_threads=cfg.max_sessions)
    mcp = McpHandler(service)
    mcp_http = McpHttp(service, cfg.idle_timeout_s, cfg.max_sessions)
    websockets = WebSocketEpisode(service, mcp, cfg.idle_timeout_s, cfg.max_body_bytes)
    started = time.time()

    @asynccontextmanager
    async def lifespan(_: FastAPI):  # type: ignore[no-untyped-def]
        reaper = asyncio.create_task(sessions.reap_forever())
        async with mcp_http.manager.run():  # the SDK's MCP sessions live in its task group
            yield
        reaper.cancel()
        with suppress(asyncio.CancelledError):
            await reaper
        sessions.close_all()
        sandbox.close()

    app = FastAPI(title="sandbox-env", version=__version__, lifespan=lifespan, description=DESCRIPTION)
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

    @app.exception_handler(EnvError)
    async def _episode_error(_: Request, exc: EnvError) -> JSONResponse:
        return JSONResponse({"detail": exc.message, "code": exc.code}, status_code=exc.status)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        """Framework errors (unparsable body, unknown route, wrong method) in the same shape."""
        codes = {400: "INVALID_JSON", 404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED"}
        code = codes.get(exc.status_code, "HTTP_ERROR")
        return JSONResponse({"detail": str(exc.detail), "code": code}, status_code=exc.status_code,
                            headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        msgs = [f"{'.'.join(str(p) for p in e['loc'] if p != 'body') or 'body'}: {e['msg']}"
                for e in exc.errors()]
        return JSONResponse({"detail": "invalid request: " + "; ".join(msgs[:8]),
                             "code": "VALIDATION_ERROR"}, status_code=422)

    async def json_body(request: Request) -> dict[str, Any]:
        raw = await request.body()
        if not raw.strip():
            return {}
        try:
            data = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise InvalidJson(f"malformed JSON: {exc}") from None
        if not isinstance(data, dict):
            raise InvalidRequest("the request body must be a JSON object")
        return data

    @app.post("/reset", response_model=StepResult, responses=errors(400, 404, 409, 413, 422, 503),
              openapi_extra={"requestBody": {"required": False, "content": {"application/json": {
                  "schema": ResetParams.model_json_schema()}}}})
    async def reset(request: Request) -> Response:
        params = parse_reset(await json_body(request))
        service.check_task(params.task)
        session = sessions.open(params.episode_id)
        return _json(await service.reset(session, params))

    @app.post("/step", response_model=StepResult, responses=errors(400, 404, 409, 413, 422, 503),
              openapi_extra={**EPISODE_HEADER, "requestBody": {"required": True, "content": {
                  "application/json": {"schema": step_schema}}}})
    async def step(request: Request) -> Response:
        # No FastAPI parameters: dependency solving would cost more than the step itself.
        body = await json_body(request)
        header = header_episode_id(request)  # validated even when the body names the episode
        episode_id = body.pop("episode_id", None) or header
        if episode_id is not None and not isinstance(episode_id, str):
            raise InvalidRequest("episode_id must be a string")
        action = service.parse_action(body["action"] if "action" in body else body)
        return _json(await service.step(sessions.get(episode_id), action))

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
        return HealthReply(status=status, mode=sandbox.mode, docker_available=ok,  # type: ignore[arg-type]
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

    return app

