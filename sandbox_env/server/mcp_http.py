"""Streamable-HTTP MCP at ``/mcp`` with the official SDK: one episode per MCP session.

``initialize`` issues an ``Mcp-Session-Id``; the session has no episode until its
``start_episode`` tool call (which restarts it when called again); the episode's id is the
MCP session id, so ``/ws?session_id=<Mcp-Session-Id>`` attaches to it; ``DELETE /mcp``, the
SDK's idle timeout or a crash end the session and close its episode. Requests without
``Mcp-Session-Id`` that are not a streamable client's ``initialize`` go to OpenEnv's
session-less dialect (see ``mcp.py`` for why that one is hand-written).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from .. import __version__
from ..errors import EnvError, InvalidRequest, NoEpisode, NoMcpSession, UnknownEpisode
from .mcp import INSTRUCTIONS, START_TOOL, TOOLS, run_tool, tool_error
from .service import EpisodeService
from .sessions import Session


@dataclass
class _McpSession:
    """Per MCP session state (the SDK's per-session lifespan context)."""

    episode_id: str | None = None


class McpHttp:
    """The SDK server and session manager, and the ASGI entry that picks the dialect."""

    def __init__(self, service: EpisodeService, idle_timeout_s: float, max_sessions: int) -> None:
        self.service = service
        self.server: Server[_McpSession, Request] = Server(
            "sandbox-env", version=__version__, instructions=INSTRUCTIONS, lifespan=self._lifespan)
        self._tools = [types.Tool.model_validate(t) for t in TOOLS]
        self.server.list_tools()(self._list_tools)
        self.server.call_tool(validate_input=False)(self._call_tool)
        # MCP sessions without an episode cost little; episodes stay bounded by SessionManager.
        self.manager = StreamableHTTPSessionManager(
            self.server, json_response=True, session_idle_timeout=idle_timeout_s,
            max_sessions=4 * max_sessions)

    @asynccontextmanager
    async def _lifespan(self, _: Server[_McpSession, Request]) -> AsyncIterator[_McpSession]:
        state = _McpSession()
        try:
            yield state
        finally:  # the session ended (DELETE, idle timeout, crash, shutdown): so does its episode
            if state.episode_id is not None:
                with anyio.CancelScope(shield=True):
                    await self.service.sessions.close(state.episode_id)

    async def _list_tools(self) -> list[types.Tool]:
        return self._tools

    async def _call_tool(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        ctx = self.server.request_context
        state = ctx.lifespan_context
        sid = ctx.request.headers.get(MCP_SESSION_ID_HEADER) if ctx.request is not None else None

        def session_for(starting: bool) -> Session:
            if sid is None:  # unreachable through the session manager: it refuses id-less calls
                raise NoMcpSession("no Mcp-Session-Id: initialize first")
            if starting:
                session = self.service.sessions.open(sid)
                state.episode_id = sid
                return session
            if state.episode_id is None:
                raise NoEpisode(f"no episode in this MCP session yet: call "
                                   f"{START_TOOL} (task, seed, compact) first")
            try:
                return self.service.sessions.get(sid)
            except EnvError:
                raise UnknownEpisode(f"this session's episode expired or was "
                                   f"closed: call {START_TOOL} to start a new one") from None

        try:
            result = await run_tool(self.service, name, arguments, session_for)
        except EnvError as exc:
            result = tool_error(f"{exc.code}: {exc.message}")
        return types.CallToolResult.model_validate(result)

    # ---------------------------------------------------------------- ASGI
    async def handle(self, scope: Scope, receive: Receive, send: Send, legacy: Any) -> None:
        """Route one /mcp request: the SDK for MCP sessions, ``legacy`` (McpHandler) otherwise."""
        request = Request(scope, receive)
        method = scope["method"]
        sid = request.headers.get(MCP_SESSION_ID_HEADER)
        if method == "GET":  # no server-initiated messages: the spec's answer is 405
            await Response(status_code=405, headers={"allow": "POST, DELETE"})(scope, receive, send)
            return
        if method == "POST" and sid is None:
            body = await request.body()
            if not _streamable_initialize(body, request.headers.get("accept", "")):
                reply = await legacy.handle_raw(body, episode_header=_episode_header(request))
                response = (Response(status_code=202) if reply is None
                            else Response(json.dumps(reply), media_type="application/json"))
                await response(scope, receive, send)
                return
            receive = _replay(body, receive)
        await self.manager.handle_request(scope, receive, send)
        if method == "DELETE" and sid is not None:  # don't wait for the session task to wind down
            await self.service.sessions.close(sid)


def _streamable_initialize(body: bytes, accept: str) -> bool:
    """A streamable-HTTP client's opening request: ``initialize``, accepting SSE (spec-mandated)."""
    if "text/event-stream" not in accept:
        return False
    try:
        data = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return False
    return isinstance(data, dict) and data.get("method") == "initialize"


def _episode_header(request: Request) -> str | None:
    value = request.headers.get("x-episode-id")
    if value is not None and len(value) > 128:
        raise InvalidRequest("X-Episode-Id: at most 128 characters")
    return value


def _replay(body: bytes, receive: Receive) -> Receive:
    """A receive channel that yields the already-read body once, then the real channel."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


class AsgiReply(Response):
    """A FastAPI return value that hands the raw request to an ASGI callable."""

    def __init__(self, call: Any) -> None:
        super().__init__()
        self._call = call

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._call(scope, receive, send)
