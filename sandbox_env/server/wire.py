"""Request and reply models of the HTTP API, so that its OpenAPI schema documents every response."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from ..actions import ACTIONS, Action
from ..errors import ERRORS
from ..models import Mode

EPISODE_ID = Field(min_length=1, max_length=128)


class ErrorBody(BaseModel):
    """Every 4xx/5xx: a message for a human or an agent, and a stable machine code."""

    detail: str
    code: str = Field(description="one of: " + ", ".join(ERRORS) + " (sandbox_env/errors.py)")


class StepRequest(BaseModel):
    """The OpenEnv form of a step. The seed's flat form, the action's own fields next to
    ``episode_id`` ({"action_type": ..., ..., "episode_id": ...}), is accepted too."""

    model_config = ConfigDict(extra="forbid")
    action: Action
    episode_id: str | None = Field(default=None, min_length=1, max_length=128, description=(
        "or the X-Episode-Id header; optional while one episode is live"))


def _flat(model: type[BaseModel]) -> type[BaseModel]:
    """An action model that also carries ``episode_id`` (the seed's flat step body)."""
    return type(f"Flat{model.__name__}", (model,), {
        "__annotations__": {"episode_id": str | None},
        "episode_id": Field(default=None, min_length=1, max_length=128),
        "__doc__": model.__doc__,
    })


FLAT_ACTIONS = [_flat(m) for m in ACTIONS]


def step_body_schema() -> tuple[dict[str, Any], dict[str, Any]]:
    """The /step body (the wrapped form or any flat action) and the component schemas it refers to."""
    flat = Annotated[Union[tuple(FLAT_ACTIONS)], Field(discriminator="action_type")]  # noqa: UP007
    schema = TypeAdapter(StepRequest | flat).json_schema(  # type: ignore[arg-type]
        ref_template="#/components/schemas/{model}")
    return {"anyOf": schema["anyOf"]}, schema.get("$defs", {})


class CloseRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    episode_id: str = EPISODE_ID


class CloseReply(BaseModel):
    closed: str


class HealthReply(BaseModel):
    status: Literal["healthy", "degraded"] = Field(
        description="degraded: docker mode with the engine unreachable (runs answer 503 meanwhile)")
    mode: Mode
    mode_reason: str = Field(default="", description="why this backend serves: asked for by name, or "
                             "auto mode's choice and why the tiers before it could not")
    docker_available: bool
    docker_detail: str
    task_count: int
    active_sessions: int
    max_sessions: int
    expired_sessions: int
    idle_timeout_s: float
    version: str
    uptime_s: float
    runtime: str | None = Field(default=None, description="docker mode: OCI runtime of the sandbox "
                                "containers (runc, or runsc for gVisor); null in other modes")
    runtime_version: str | None = None
    runtime_in_effect: bool | None = Field(default=None, description="probed once from inside a "
                                           "container: gVisor's kernel for runsc, the host's for runc")


class TaskSummary(BaseModel):
    id: str
    title: str
    difficulty: str


class TaskInfo(TaskSummary):
    max_steps: int
    run_command: str
    files: list[str]


class MetadataReply(BaseModel):
    name: str
    description: str
    version: str
    author: str
    mode: Mode
    actions: list[str]
    reward_range: tuple[float, float]
    tasks: list[TaskSummary]


class SchemaReply(BaseModel):
    action: dict[str, Any]
    observation: dict[str, Any]
    state: dict[str, Any]


class JsonRpcError(BaseModel):
    code: int
    message: str
    data: Any = None


class JsonRpcReply(BaseModel):
    """A JSON-RPC 2.0 response: ``result`` or ``error``; protocol errors are replies too (200)."""

    jsonrpc: Literal["2.0"]
    id: str | int | None
    result: Any = None
    error: JsonRpcError | None = None


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries for the error statuses a route can answer."""
    return {s: {"model": ErrorBody} for s in statuses}
