"""MCP tools: the one tool table and tool runner of every MCP face, and the hand-written JSON-RPC dialect.

Standard MCP (streamable HTTP, ``Mcp-Session-Id``) is served by the official SDK in
``mcp_http.py``. :class:`McpHandler` here answers the two dialects the SDK cannot, measured
with mcp 1.30.0 and the OpenEnv clients:

* MCP messages embedded in ``/ws`` frames (``{"type": "mcp", "data": <JSON-RPC>}``): the SDK
  has no transport for JSON-RPC carried inside another protocol's frames; there calls run in
  the connection's episode.
* OpenEnv's session-less JSON-RPC on ``POST /mcp``: ``MCPToolClient`` of openenv 0.10.0 and
  of openenv-core 0.3.0 (production mode) posts ``openenv/session/create``, ``tools/list`` and
  ``tools/call {session_id}`` without ``initialize``, without ``Mcp-Session-Id`` and with
  ``Accept: */*``, and ``openenv validate --url`` posts ``{}`` expecting a 200 JSON-RPC reply.
  The SDK's session manager answers those 400 ("No valid session ID") or 406, and its
  request union has no ``openenv/session/*`` methods.

Both faces list :data:`TOOLS` and run calls through :func:`run_tool`: ``start_episode``
(start or restart the caller's episode on a task, seed and observation form) and the five
actions.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .. import __version__
from ..actions import ACTIONS, tool_input_schema, validation_message
from ..errors import EnvError, EpisodeInUse, InvalidRequest, MethodNotFound, UnknownEpisode
from ..models import Observation
from .service import EpisodeService, ResetParams, parse_reset
from .sessions import Session

PROTOCOL_VERSION = "2025-06-18"
PARSE_ERROR, INVALID_REQUEST = -32700, -32600  # JSON-RPC's own; episode errors: errors.ERRORS
START_TOOL = "start_episode"
INSTRUCTIONS = (f"Call {START_TOOL} (task, seed, compact) to start an episode in this session, then "
                "the action tools; submit_fix ends the episode and scores it; "
                f"{START_TOOL} again starts a new one.")


class JsonRpcRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    jsonrpc: str = Field(pattern=r"^2\.0$")
    method: str = Field(min_length=1, max_length=200)
    params: dict[str, Any] | None = None
    id: str | int | None = None


class StartEpisode(BaseModel):
    """Start (or restart) this session's episode: on the task given (random by seed if omitted).

    compact=false (the default) sends every workspace file in current_files on every step;
    compact=true only the files each step read or changed. Call this before any other tool.
    """

    model_config = ConfigDict(extra="forbid", strict=True)
    task: str | None = Field(default=None, max_length=200, description="task id (GET /tasks)")
    seed: int | None = Field(default=None, description="picks the task when task is omitted")
    compact: bool = Field(default=False, description="only the files a step touched in current_files")


def _start_schema() -> dict[str, Any]:
    schema = StartEpisode.model_json_schema()
    return {"type": "object", "properties": schema["properties"], "required": schema.get("required", []),
            "additionalProperties": False}


# The five actions as tools, derived from the action table (actions.py)
ACTION_TOOLS = [{"name": m.kind(), "description": m.summary(), "inputSchema": tool_input_schema(m)}
                for m in ACTIONS]
TOOLS = [{"name": START_TOOL, "description": " ".join((StartEpisode.__doc__ or "").split()),
          "inputSchema": _start_schema()}, *ACTION_TOOLS]
TOOL_NAMES = tuple(t["name"] for t in TOOLS)


def observation_text(obs: Observation) -> str:
    """The observation as text for a tool result: output first, then errors, hint, status."""
    parts = [obs.terminal_output]
    if obs.step_number == 0:
        parts += [f"[task] {obs.task_name}: {obs.task_description}", obs.instructions,
                  "[files] " + ", ".join(obs.files)]
    if obs.last_action_error and obs.last_action_error not in obs.terminal_output:
        parts.append(f"[error] {obs.last_action_error}")
    if obs.hint:
        parts.append(f"[hint] {obs.hint}")
    status = (f"[status] episode={obs.episode_id} run_status={obs.run_status} "
              f"step={obs.step_number}/{obs.max_steps} reward={obs.reward:.3f} done={str(obs.done).lower()}")
    if obs.score is not None:
        status += f" score={obs.score:.3f}"
    parts.append(status)
    return "\n".join(p for p in parts if p)


def tool_error(message: str) -> dict[str, Any]:
    """A tool result that failed (MCP ``isError``), for errors the agent can act on."""
    return {"content": [{"type": "text", "text": message}], "isError": True}


def parse_start(args: dict[str, Any]) -> ResetParams:
    try:
        start = StartEpisode.model_validate(args)
    except ValidationError as exc:
        raise InvalidRequest(validation_message(exc, START_TOOL)) from None
    return ResetParams(task=start.task, seed=start.seed, compact=start.compact)


async def run_tool(service: EpisodeService, name: Any, args: Any,
                   session_for: Callable[[bool], Session]) -> dict[str, Any]:
    """Run one tool call; ``session_for(starting)`` gives the caller's episode (may raise).

    Raises an :class:`~sandbox_env.errors.EnvError` for a call that cannot run (unknown tool,
    invalid arguments, no episode, episode done); each face reports it in its own protocol.
    """
    if name not in TOOL_NAMES:
        raise InvalidRequest(f"unknown tool {name!r}; tools: {', '.join(TOOL_NAMES)}")
    if not isinstance(args, dict):
        raise InvalidRequest("arguments must be an object")
    if name == START_TOOL:
        params = parse_start(args)
        service.check_task(params.task, params.seed)
        res = await service.reset(session_for(True), params)
    else:
        action = service.parse_action({**args, "action_type": name})
        res = await service.step(session_for(False), action)
    obs = res.observation
    return {"content": [{"type": "text", "text": observation_text(obs)}],
            "structuredContent": res.model_dump(mode="json"),
            "isError": obs.last_action_error is not None}


def _error(req_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    err: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return {"jsonrpc": "2.0", "id": req_id, "error": err}


def _ok(req_id: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": req_id, "result": result}


class McpHandler:
    """Answers one JSON-RPC message; ``bound`` is the WebSocket's session when there is one."""

    def __init__(self, service: EpisodeService) -> None:
        self.service = service

    async def handle_raw(self, raw: bytes | str, episode_header: str | None = None) -> dict[str, Any] | None:
        try:
            data = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            return _error(None, PARSE_ERROR, f"Parse error: {exc}")
        return await self.handle(data, episode_header=episode_header)

    async def handle(self, data: Any, *, episode_header: str | None = None,
                     bound: Session | None = None) -> dict[str, Any] | None:
        """The response, or None for a notification (a request without an id)."""
        if isinstance(data, list):
            return _error(None, INVALID_REQUEST, "Invalid Request: batch requests are not supported")
        if not isinstance(data, dict):
            return _error(None, INVALID_REQUEST, "Invalid Request: expected a JSON-RPC 2.0 object")
        req_id = data.get("id") if isinstance(data.get("id"), str | int) else None
        try:
            req = JsonRpcRequest.model_validate(data)
        except ValidationError as exc:
            return _error(req_id, INVALID_REQUEST, validation_message(exc, "Invalid Request", 6))
        notification = "id" not in data
        try:
            result = await self._dispatch(req, episode_header, bound)
        except EnvError as exc:
            return _error(req.id, exc.face.jsonrpc, exc.message, {"code": exc.code})
        return None if notification else _ok(req.id, result)

    async def _dispatch(self, req: JsonRpcRequest, episode_header: str | None,
                        bound: Session | None) -> Any:
        params = req.params or {}
        match req.method:
            case "initialize":
                return {"protocolVersion": params.get("protocolVersion") or PROTOCOL_VERSION,
                        "capabilities": {"tools": {"listChanged": False}},
                        "serverInfo": {"name": "sandbox-env", "version": __version__},
                        "instructions": INSTRUCTIONS + " Without Mcp-Session-Id (OpenEnv's dialect) "
                                        "pass session_id from openenv/session/create."}
            case "notifications/initialized" | "ping":
                return {}
            case "tools/list":
                return {"tools": TOOLS}
            case "tools/call":
                return await run_tool(self.service, params.get("name"), params.get("arguments") or {},
                                      self._session_for(params, episode_header, bound))
            case "openenv/session/create":
                if bound is not None:
                    raise EpisodeInUse("this WebSocket already has its "
                                       "episode; send a reset message instead")
                reset = parse_reset(params)
                self.service.check_task(reset.task, reset.seed)
                # named, never anonymous: an id-less /reset of another client must not replace it
                session = self.service.sessions.open(reset.episode_id or new_episode_id())
                res = await self.service.reset(session, reset)
                return {"session_id": session.episode_id, **res.model_dump(mode="json")}
            case "openenv/session/close":
                sid = params.get("session_id")
                if not isinstance(sid, str) or not sid:
                    raise InvalidRequest("session_id (string) is required")
                if bound is not None and sid == bound.episode_id:
                    raise EpisodeInUse("close the WebSocket to end its episode")
                if not await self.service.sessions.close(sid):
                    raise UnknownEpisode(f"unknown session_id {sid!r}")
                return {"session_id": sid, "closed": True}
        raise MethodNotFound(f"Method not found: {req.method}")

    def _session_for(self, params: dict[str, Any], episode_header: str | None,
                     bound: Session | None) -> Callable[[bool], Session]:
        def session_for(starting: bool) -> Session:
            if bound is not None:
                return bound
            sid = params.get("session_id") or params.get("episode_id") or episode_header
            if sid is not None and not isinstance(sid, str):
                raise InvalidRequest("session_id must be a string")
            if starting:  # start_episode without a session: a new named episode
                return self.service.sessions.open(sid or new_episode_id())
            return self.service.sessions.get(sid)
        return session_for


def new_episode_id() -> str:
    return uuid.uuid4().hex
