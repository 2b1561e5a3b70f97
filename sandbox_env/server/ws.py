"""OpenEnv WebSocket face at ``/ws``: one environment per connection, closed with the socket.

Client messages ``{"type": "reset"|"step"|"state"|"close"|"mcp", "data": ...}``; replies
``{"type": "observation"|"state"|"mcp"|"error", "data": ...}``. A connection that stays
silent past the idle timeout gets an ``IDLE_TIMEOUT`` error and is closed (the session
reaper interrupts it: no timer per message).

``/ws?session_id=<id>`` attaches to the live episode of that MCP session (its
``Mcp-Session-Id``) or OpenEnv session (``openenv/session/create``) instead: the socket
borrows it (closing the socket leaves it to its owner) and is refused with an error frame and
close code 1008 when there is no such episode. ``step`` also takes OpenEnv's MCP actions
``{"type": "list_tools"}`` and ``{"type": "call_tool", "tool_name", "arguments"}``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from starlette.websockets import WebSocket, WebSocketDisconnect

from ..errors import EnvError, EpisodeInUse
from .mcp import TOOLS, McpHandler, run_tool
from .service import EpisodeService, parse_reset
from .sessions import Session

WS_TRY_AGAIN_LATER = 1013
WS_GOING_AWAY = 1001
WS_POLICY_VIOLATION = 1008


def error_frame(code: str, message: str, **extra: Any) -> str:
    return json.dumps({"type": "error", "data": {"message": message, "code": code, **extra}})


class WebSocketEpisode:
    """Runs the message loop of one connection against its own session."""

    def __init__(self, service: EpisodeService, mcp: McpHandler, idle_timeout_s: float,
                 max_message_bytes: int) -> None:
        self.service, self.mcp = service, mcp
        self.idle_timeout_s, self.max_message_bytes = idle_timeout_s, max_message_bytes

    async def serve(self, ws: WebSocket) -> None:
        await ws.accept()
        sessions = self.service.sessions
        borrowed = ws.query_params.get("session_id")
        if borrowed is not None:
            await self._serve_borrowed(ws, borrowed)
            return
        try:
            session = sessions.open(None, attached=True)
        except EnvError as exc:
            await ws.send_text(error_frame(exc.code, exc.message, active_sessions=len(sessions),
                                           max_sessions=sessions.max_sessions))
            await ws.close(code=WS_TRY_AGAIN_LATER, reason=exc.code)
            return
        task = asyncio.current_task()
        assert task is not None
        session.on_idle = task.cancel
        try:
            await self._loop(ws, session)
        except WebSocketDisconnect:
            pass
        except asyncio.CancelledError:
            if not session.idle_expired or task.uncancel():
                raise  # a real cancellation (shutdown), not the reaper's
            await ws.send_text(error_frame(
                "IDLE_TIMEOUT", f"no message for {self.idle_timeout_s:g} s; the episode is closed"))
            await ws.close(code=WS_GOING_AWAY, reason="idle timeout")
        finally:
            await sessions.close(session.episode_id)

    async def _serve_borrowed(self, ws: WebSocket, episode_id: str) -> None:
        """Run the loop on an HTTP/MCP session's episode, which the socket does not own."""
        try:
            session = self.service.sessions.get(episode_id) if episode_id else None
        except EnvError:
            session = None
        if session is None or session.attached:
            await ws.send_text(error_frame("UNKNOWN_EPISODE", f"no episode to attach to for session_id "
                                           f"{episode_id!r}: start one first (MCP start_episode or "
                                           "openenv/session/create), or connect /ws without session_id"))
            await ws.close(code=WS_POLICY_VIOLATION, reason="UNKNOWN_EPISODE")
            return
        try:
            await self._loop(ws, session, borrowed=True)
        except WebSocketDisconnect:
            pass

    def _still_live(self, session: Session) -> bool:
        try:
            return self.service.sessions.get(session.episode_id) is session
        except EnvError:
            return False

    async def _loop(self, ws: WebSocket, session: Session, borrowed: bool = False) -> None:
        while True:
            msg = await ws.receive()
            if msg["type"] == "websocket.disconnect":
                return
            if borrowed and not self._still_live(session):
                await ws.send_text(error_frame("UNKNOWN_EPISODE", f"episode {session.episode_id!r} "
                                               "was closed or expired by its session; the socket closes"))
                await ws.close(code=WS_POLICY_VIOLATION, reason="UNKNOWN_EPISODE")
                return
            session.touch()
            raw = msg.get("text")
            if raw is None:
                raw = (msg.get("bytes") or b"").decode("utf-8", errors="replace")
            if len(raw) > self.max_message_bytes:
                await ws.send_text(error_frame("PAYLOAD_TOO_LARGE",
                                               f"message over {self.max_message_bytes} bytes"))
                continue
            reply, stop = await self._handle(raw, session, borrowed)
            if reply is not None:
                await ws.send_text(reply)
            if stop:
                await ws.close(code=1000)
                return

    async def _handle(self, raw: str, session: Session, borrowed: bool) -> tuple[str | None, bool]:
        try:
            message = json.loads(raw)
        except json.JSONDecodeError as exc:
            return error_frame("INVALID_JSON", f"Invalid JSON: {exc}"), False
        if not isinstance(message, dict):
            return error_frame("VALIDATION_ERROR", "a message must be a JSON object with a type"), False
        kind, data = message.get("type"), message.get("data")
        try:
            match kind:
                case "reset":
                    params = parse_reset(data, lenient=True)
                    if params.episode_id and params.episode_id != session.episode_id:
                        if borrowed:
                            raise EpisodeInUse("this socket is attached to "
                                               f"episode {session.episode_id!r}; its id cannot change")
                        self.service.sessions.rename(session, params.episode_id)
                    res = await self.service.reset(session, params)
                    return '{"type":"observation","data":' + res.model_dump_json() + "}", False
                case "step":
                    if isinstance(data, dict) and "action_type" not in data and "action" in data:
                        data = data["action"]
                    if isinstance(data, dict) and data.get("type") in ("list_tools", "call_tool"):
                        return await self._mcp_action(data, session), False
                    res = await self.service.step(session, self.service.parse_action(data))
                    return '{"type":"observation","data":' + res.model_dump_json() + "}", False
                case "state":
                    state = self.service.state(session).model_dump_json()
                    return '{"type":"state","data":' + state + "}", False
                case "close":
                    return None, True
                case "mcp":
                    resp = await self.mcp.handle(data, bound=session)
                    return (json.dumps({"type": "mcp", "data": resp}) if resp is not None else None), False
        except EnvError as exc:
            return error_frame(exc.code, exc.message), False
        return error_frame("UNKNOWN_TYPE", f"unknown message type {kind!r}; expected one of "
                           "reset, step, state, close, mcp"), False

    async def _mcp_action(self, data: dict[str, Any], session: Session) -> str:
        """OpenEnv's MCP actions as steps: the tool list, or one tool call in this episode."""
        if data["type"] == "list_tools":
            obs: dict[str, Any] = {"tools": TOOLS, "done": False, "reward": None, "metadata": {}}
            return json.dumps({"type": "observation", "data": {
                "observation": obs, "reward": None, "done": False, "episode_id": session.episode_id}})
        name = data.get("tool_name")
        try:
            result = await run_tool(self.service, name, data.get("arguments") or {}, lambda _: session)
        except EnvError as exc:
            kind = ("tool_not_found" if exc.message.startswith("unknown tool") else
                    "invalid_args" if exc.code in ("INVALID_ACTION", "VALIDATION_ERROR", "UNKNOWN_TASK",
                                                    "VARIANT_NOT_CERTIFIED")
                    else "execution_error")
            obs = {"tool_name": name, "result": None, "done": False, "reward": None, "metadata": {},
                   "error": {"error_type": kind, "message": f"{exc.code}: {exc.message}"}}
            return json.dumps({"type": "observation", "data": {
                "observation": obs, "reward": None, "done": False, "episode_id": session.episode_id}})
        step = result["structuredContent"]
        obs = {"tool_name": name, "result": result, "error": None, "done": step["done"],
               "reward": step["reward"], "metadata": {}}
        return json.dumps({"type": "observation", "data": {
            "observation": obs, "reward": step["reward"], "done": step["done"],
            "episode_id": session.episode_id}})
