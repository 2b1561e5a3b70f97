"""MCP face: JSON-RPC 2.0 `initialize`, `tools/list` (the five actions) and `tools/call` on a session.

Also the OpenEnv session extensions `openenv/session/create` (which resets the new episode)
and `openenv/session/close`. Served at ``POST /mcp`` and inside the WebSocket as ``mcp``
messages, where calls run in the connection's own episode.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .. import __version__
from ..models import ACTION_TYPES, EditFile, ExecuteBash, Observation, ReadFile, SubmitFix, ViewGitDiff
from .service import EpisodeService, parse_reset
from .sessions import EpisodeError, Session

PROTOCOL_VERSION = "2025-06-18"
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, SERVER_ERROR = (
    -32700, -32600, -32601, -32602, -32000)
_PARAM_CODES = {"INVALID_ACTION", "VALIDATION_ERROR", "UNKNOWN_TASK", "UNKNOWN_EPISODE",
                "EPISODE_ID_REQUIRED", "NO_EPISODE"}


class JsonRpcRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    jsonrpc: str = Field(pattern=r"^2\.0$")
    method: str = Field(min_length=1, max_length=200)
    params: dict[str, Any] | None = None
    id: str | int | None = None


def _tool(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema()
    props = {k: v for k, v in schema["properties"].items() if k not in ("action_type", "metadata")}
    return {
        "name": model.model_fields["action_type"].default,
        "description": (model.__doc__ or "").strip(),
        "inputSchema": {"type": "object", "properties": props,
                        "required": [k for k in schema.get("required", []) if k in props],
                        "additionalProperties": False},
    }


TOOLS = [_tool(m) for m in (ReadFile, EditFile, ExecuteBash, ViewGitDiff, SubmitFix)]
assert [t["name"] for t in TOOLS] == list(ACTION_TYPES)


def observation_text(obs: Observation) -> str:
    """The observation as text for a tool result: output first, then errors, hint, status."""
    parts = [obs.terminal_output]
    if obs.last_action_error and obs.last_action_error not in obs.terminal_output:
        parts.append(f"[error] {obs.last_action_error}")
    if obs.hint:
        parts.append(f"[hint] {obs.hint}")
    status = (f"[status] run_status={obs.run_status} step={obs.step_number}/{obs.max_steps} "
              f"reward={obs.reward:.3f} done={str(obs.done).lower()}")
    if obs.score is not None:
        status += f" score={obs.score:.3f}"
    parts.append(status)
    return "\n".join(p for p in parts if p)


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
            msgs = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'request'}: {e['msg']}"
                             for e in exc.errors()[:6])
            return _error(req_id, INVALID_REQUEST, f"Invalid Request: {msgs}")
        notification = "id" not in data
        try:
            result = await self._dispatch(req, episode_header, bound)
        except EpisodeError as exc:
            code = (METHOD_NOT_FOUND if exc.code == "METHOD_NOT_FOUND"
                    else INVALID_PARAMS if exc.code in _PARAM_CODES else SERVER_ERROR)
            return _error(req.id, code, exc.message, {"code": exc.code})
        return None if notification else _ok(req.id, result)

    async def _dispatch(self, req: JsonRpcRequest, episode_header: str | None,
                        bound: Session | None) -> Any:
        params = req.params or {}
        match req.method:
            case "initialize":
                return {"protocolVersion": params.get("protocolVersion") or PROTOCOL_VERSION,
                        "capabilities": {"tools": {"listChanged": False}},
                        "serverInfo": {"name": "sandbox-env", "version": __version__},
                        "instructions": "Call openenv/session/create (or reset over /ws), then the "
                                        "tools with session_id; submit_fix ends the episode."}
            case "notifications/initialized" | "ping":
                return {}
            case "tools/list":
                return {"tools": TOOLS}
            case "tools/call":
                return await self._call_tool(params, episode_header, bound)
            case "openenv/session/create":
                if bound is not None:
                    raise EpisodeError(409, "EPISODE_IN_USE", "this WebSocket already has its "
                                       "episode; send a reset message instead")
                reset = parse_reset(params)
                self.service.check_task(reset.task)
                session = self.service.sessions.open(reset.episode_id)
                res = await self.service.reset(session, reset)
                return {"session_id": session.episode_id, **res.model_dump(mode="json")}
            case "openenv/session/close":
                sid = params.get("session_id")
                if not isinstance(sid, str) or not sid:
                    raise EpisodeError(422, "VALIDATION_ERROR", "session_id (string) is required")
                if bound is not None and sid == bound.episode_id:
                    raise EpisodeError(409, "EPISODE_IN_USE", "close the WebSocket to end its episode")
                if not await self.service.sessions.close(sid):
                    raise EpisodeError(404, "UNKNOWN_EPISODE", f"unknown session_id {sid!r}")
                return {"session_id": sid, "closed": True}
        raise EpisodeError(404, "METHOD_NOT_FOUND", f"Method not found: {req.method}")

    async def _call_tool(self, params: dict[str, Any], episode_header: str | None,
                         bound: Session | None) -> dict[str, Any]:
        name, args = params.get("name"), params.get("arguments") or {}
        if name not in ACTION_TYPES:
            raise EpisodeError(422, "VALIDATION_ERROR",
                               f"unknown tool {name!r}; tools: {', '.join(ACTION_TYPES)}")
        if not isinstance(args, dict):
            raise EpisodeError(422, "VALIDATION_ERROR", "arguments must be an object")
        action = self.service.parse_action({**args, "action_type": name})
        if bound is not None:
            session = bound
        else:
            sid = params.get("session_id") or params.get("episode_id") or episode_header
            session = self.service.sessions.get(sid if isinstance(sid, str) else None)
        res = await self.service.step(session, action)
        obs = res.observation
        return {"content": [{"type": "text", "text": observation_text(obs)}],
                "structuredContent": res.model_dump(mode="json"),
                "isError": obs.last_action_error is not None}

