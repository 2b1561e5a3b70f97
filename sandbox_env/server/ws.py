"""OpenEnv WebSocket face at ``/ws``: one environment per connection, closed with the socket.

Client messages ``{"type": "reset"|"step"|"state"|"close"|"mcp", "data": ...}``; replies
``{"type": "observation"|"state"|"mcp"|"error", "data": ...}``. A connection that stays
silent past the idle timeout gets an ``IDLE_TIMEOUT`` error and is closed (the session
reaper interrupts it: no timer per message).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from starlette.websockets import WebSocket, WebSocketDisconnect

from .mcp import McpHandler
from .service import EpisodeService, parse_reset
from .sessions import EpisodeError, Session

WS_TRY_AGAIN_LATER = 1013
WS_GOING_AWAY = 1001


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
        try:
            session = sessions.open(None, attached=True)
        except EpisodeError as exc:
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

    async def _loop(self, ws: WebSocket, session: Session) -> None:
        while True:
            msg = await ws.receive()
            if msg["type"] == "websocket.disconnect":
                return
            session.touch()
            raw = msg.get("text")
            if raw is None:
                raw = (msg.get("bytes") or b"").decode("utf-8", errors="replace")
            if len(raw) > self.max_message_bytes:
                await ws.send_text(error_frame("PAYLOAD_TOO_LARGE",
                                               f"message over {self.max_message_bytes} bytes"))
                continue
            reply, stop = await self._handle(raw, session)
            if reply is not None:
                await ws.send_text(reply)
            if stop:
                await ws.close(code=1000)
                return

    async def _handle(self, raw: str, session: Session) -> tuple[str | None, bool]:
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
                    if params.episode_id:
                        self.service.sessions.rename(session, params.episode_id)
                    res = await self.service.reset(session, params)
                    return '{"type":"observation","data":' + res.model_dump_json() + "}", False
                case "step":
                    if isinstance(data, dict) and "action_type" not in data and "action" in data:
                        data = data["action"]
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
        except EpisodeError as exc:
            return error_frame(exc.code, exc.message), False
        return error_frame("UNKNOWN_TYPE", f"unknown message type {kind!r}; expected one of "
                           "reset, step, state, close, mcp"), False
