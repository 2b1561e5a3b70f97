"""The hot HTTP routes, POST /reset and POST /step, on raw bodies: one implementation that
FastAPI's routes call and that ``FastRoutes`` serves as plain ASGI ahead of FastAPI's routing.

FastAPI's routing, request objects and middleware stack cost more per request than a mock
step itself. ``FastRoutes`` answers exactly these two routes with the same bytes, statuses and
headers as the framework routes (the body limit is the same ``BodyLimit``, errors the same
``error_reply``, an unexpected exception a plain 500 like Starlette's); everything else, the
OpenAPI schema of these routes included, stays FastAPI's.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.responses import JSONResponse, PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from ..errors import EnvError, InvalidJson, InvalidRequest
from ..models import StepResult
from .limits import BodyLimit
from .service import EpisodeService, parse_reset
from .sessions import SessionManager

_TO_JSON = StepResult.__pydantic_serializer__.to_json  # bytes, as model_dump_json's .encode()
_JSON_HEADERS = (b"content-type", b"application/json")


def error_reply(exc: EnvError) -> JSONResponse:
    """How HTTP answers every EnvError: its status (errors.ERRORS) and {detail, code}."""
    return JSONResponse({"detail": exc.message, "code": exc.code}, status_code=exc.status)


def header_episode_id(value: str | None) -> str | None:
    if value is not None and len(value) > 128:
        raise InvalidRequest("X-Episode-Id: at most 128 characters")
    return value


def json_object(raw: bytes) -> dict[str, Any]:
    """A request body as a JSON object ({} when empty)."""
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidJson(f"malformed JSON: {exc}") from None
    if not isinstance(data, dict):
        raise InvalidRequest("the request body must be a JSON object")
    return data


class EpisodeRoutes:
    """POST /reset and POST /step: a raw body (and the X-Episode-Id header) in, the reply's
    JSON out; raises EnvError, which the caller answers with ``error_reply``."""

    def __init__(self, sessions: SessionManager, service: EpisodeService) -> None:
        self.sessions, self.service = sessions, service

    async def reset(self, raw: bytes) -> bytes:
        params = parse_reset(json_object(raw))
        self.service.check_task(params.task, params.seed)
        session = self.sessions.open(params.episode_id)
        return _TO_JSON(await self.service.reset(session, params))

    async def step(self, raw: bytes, header: str | None) -> bytes:
        body = json_object(raw)
        header = header_episode_id(header)  # validated even when the body names the episode
        episode_id = body.pop("episode_id", None) or header
        if episode_id is not None and not isinstance(episode_id, str):
            raise InvalidRequest("episode_id must be a string")
        action = self.service.parse_action(body["action"] if "action" in body else body)
        return _TO_JSON(await self.service.step(self.sessions.get(episode_id), action))


class FastRoutes:
    """ASGI: POST /reset and POST /step through ``EpisodeRoutes``, under the same body limit."""

    PATHS = frozenset({"/reset", "/step"})

    def __init__(self, routes: EpisodeRoutes, max_body_bytes: int) -> None:
        self.routes = routes
        self.app: ASGIApp = BodyLimit(self._serve, limit=max_body_bytes)

    @classmethod
    def handles(cls, scope: Scope) -> bool:
        if scope["type"] != "http" or scope["method"] != "POST":
            return False
        path, root = scope["path"], scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root):]
        return path in cls.PATHS

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = False

        async def reply(status: int, body: bytes) -> None:
            nonlocal started
            started = True
            await send({"type": "http.response.start", "status": status, "headers": [
                (b"content-length", str(len(body)).encode()), _JSON_HEADERS]})
            await send({"type": "http.response.body", "body": body})

        try:
            try:
                raw = await _body(receive)
                if raw is None:
                    return  # the client went away
                if scope["path"].endswith("/step"):
                    header = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"x-episode-id"),
                                  None)
                    out = await self.routes.step(raw, header)
                else:
                    out = await self.routes.reset(raw)
            except EnvError as exc:
                started = True
                await error_reply(exc)(scope, receive, send)
                return
            await reply(200, out)
        except Exception:  # what Starlette's ServerErrorMiddleware answers, then re-raised
            if not started:
                await PlainTextResponse("Internal Server Error", status_code=500)(scope, receive, send)
            raise


async def _body(receive: Receive) -> bytes | None:
    """The whole request body, or None when the client disconnected first."""
    msg = await receive()
    if msg["type"] != "http.request":
        return None
    body: bytes = msg.get("body", b"")
    if not msg.get("more_body", False):
        return body
    chunks = [body]
    while True:
        msg = await receive()
        if msg["type"] != "http.request":
            return None
        chunks.append(msg.get("body", b""))
        if not msg.get("more_body", False):
            return b"".join(chunks)
