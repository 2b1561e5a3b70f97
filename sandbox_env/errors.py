"""One exception hierarchy for episodes, and one table from each error to every face's answer.

Everything a client, an agent or the infrastructure can make go wrong is an :class:`EnvError`
with a stable ``code``. :data:`ERRORS` says, per code, what each face answers: the HTTP
status, the JSON-RPC error code of the MCP face, and the eval runner's classification. The
WebSocket face sends the code itself in its error frames. No face decides on its own.

- :class:`RequestError`: the request or the action is at fault (a 4xx; the eval runner
  counts it as the agent's refused call).
- :class:`Unavailable`: the server or its sandbox cannot serve now (a 503; never charged to
  the agent, retried by the eval runner).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

EvalStatus = Literal["refused", "infra"]

# JSON-RPC 2.0 error codes the MCP face uses
JSONRPC_METHOD_NOT_FOUND, JSONRPC_INVALID_PARAMS, JSONRPC_SERVER_ERROR = -32601, -32602, -32000


@dataclass(frozen=True)
class ErrorFace:
    """How one error code is answered on every face."""

    http: int
    jsonrpc: int
    eval_status: EvalStatus


ERRORS: dict[str, ErrorFace] = {
    "INVALID_JSON": ErrorFace(400, JSONRPC_INVALID_PARAMS, "refused"),
    "VALIDATION_ERROR": ErrorFace(422, JSONRPC_INVALID_PARAMS, "refused"),
    "INVALID_ACTION": ErrorFace(422, JSONRPC_INVALID_PARAMS, "refused"),
    "UNKNOWN_TASK": ErrorFace(404, JSONRPC_INVALID_PARAMS, "refused"),
    "VARIANT_NOT_CERTIFIED": ErrorFace(409, JSONRPC_INVALID_PARAMS, "refused"),
    "UNKNOWN_EPISODE": ErrorFace(404, JSONRPC_INVALID_PARAMS, "refused"),
    "METHOD_NOT_FOUND": ErrorFace(404, JSONRPC_METHOD_NOT_FOUND, "refused"),
    "NO_EPISODE": ErrorFace(409, JSONRPC_INVALID_PARAMS, "refused"),
    "EPISODE_ID_REQUIRED": ErrorFace(409, JSONRPC_INVALID_PARAMS, "refused"),
    "EPISODE_IN_USE": ErrorFace(409, JSONRPC_SERVER_ERROR, "refused"),
    "NO_MCP_SESSION": ErrorFace(400, JSONRPC_INVALID_PARAMS, "refused"),
    "EPISODE_DONE": ErrorFace(409, JSONRPC_SERVER_ERROR, "refused"),
    "NOT_RESET": ErrorFace(409, JSONRPC_SERVER_ERROR, "refused"),
    "PAYLOAD_TOO_LARGE": ErrorFace(413, JSONRPC_SERVER_ERROR, "refused"),
    "CAPACITY_REACHED": ErrorFace(503, JSONRPC_SERVER_ERROR, "infra"),
    "SANDBOX_UNAVAILABLE": ErrorFace(503, JSONRPC_SERVER_ERROR, "infra"),
}


class EnvError(Exception):
    """Base of every episode error; ``code`` is stable and keys :data:`ERRORS`."""

    code: ClassVar[str] = "VALIDATION_ERROR"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    @property
    def face(self) -> ErrorFace:
        return ERRORS[self.code]

    @property
    def status(self) -> int:
        """The HTTP status of this error."""
        return self.face.http


class RequestError(EnvError):
    """The request or the action is at fault; the client can fix it."""


class Unavailable(EnvError):
    """The server or its sandbox cannot serve now; never the agent's fault, retry later."""


class InvalidJson(RequestError):
    code = "INVALID_JSON"


class InvalidRequest(RequestError):
    code = "VALIDATION_ERROR"


class InvalidAction(RequestError, ValueError):
    """An action that does not validate; the message lists what is accepted."""

    code = "INVALID_ACTION"


class UnknownTask(RequestError, KeyError):
    """No task with this id; carries the available ids."""

    code = "UNKNOWN_TASK"

    def __init__(self, task_id: str, available: list[str]) -> None:
        super().__init__(f"unknown task {task_id!r}; available: {', '.join(available)}")
        self.task_id, self.available = task_id, available

    def __str__(self) -> str:  # KeyError would quote the message
        return self.message


class UnknownVariant(UnknownTask):
    """A family's variant that does not exist (no variants declared, or the index is out of range);
    answered like an unknown task (code UNKNOWN_TASK) on every face."""

    def __init__(self, task_id: str, why: str, available: list[str]) -> None:
        RequestError.__init__(self, f"unknown variant {task_id!r}: {why}")
        self.task_id, self.available = task_id, available


class VariantNotCertified(RequestError):
    """A variant whose generated repo is not in its family's certified list."""

    code = "VARIANT_NOT_CERTIFIED"


class UnknownEpisode(RequestError):
    code = "UNKNOWN_EPISODE"


class MethodNotFound(RequestError):
    code = "METHOD_NOT_FOUND"


class NoEpisode(RequestError):
    code = "NO_EPISODE"


class EpisodeIdRequired(RequestError):
    code = "EPISODE_ID_REQUIRED"


class EpisodeInUse(RequestError):
    code = "EPISODE_IN_USE"


class NoMcpSession(RequestError):
    code = "NO_MCP_SESSION"


class EpisodeDone(RequestError, RuntimeError):
    """step() after the episode ended."""

    code = "EPISODE_DONE"


class NotReset(RequestError, RuntimeError):
    """step() or state before reset()."""

    code = "NOT_RESET"


class PayloadTooLarge(RequestError):
    code = "PAYLOAD_TOO_LARGE"


class CapacityReached(Unavailable):
    code = "CAPACITY_REACHED"


class SandboxUnavailable(Unavailable, RuntimeError):
    """The sandbox cannot run anything (engine down, image missing); never the agent's fault."""

    code = "SANDBOX_UNAVAILABLE"


def class_for(code: str) -> type[EnvError]:
    """The class that owns ``code`` (InvalidRequest for a code this version does not know)."""
    for cls in _all_subclasses(EnvError):
        if cls.__dict__.get("code") == code:
            return cls
    return InvalidRequest


def _all_subclasses(cls: type) -> list[type]:
    out = []
    for sub in cls.__subclasses__():
        out += [sub, *_all_subclasses(sub)]
    return out


def _check_table() -> None:
    codes = {c.__dict__["code"] for c in _all_subclasses(EnvError) if "code" in c.__dict__}
    missing = codes - set(ERRORS)
    assert not missing, f"error codes without a face in ERRORS: {missing}"


_check_table()
