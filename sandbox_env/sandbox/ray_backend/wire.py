"""What crosses the cluster: one call to a node's sandbox and its reply, as pydantic models.

Each call carries the whole workspace (its files) and the task's spec; the reply carries the
RunResult or Verdict and, after a run that changed files, the workspace's files as the node
left them, so the driver's workspace ends equal to what an in-process backend would leave.
"""

from __future__ import annotations

import base64
from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PlainSerializer

from ...models import Limits, RunResult
from ...suite.tasks import TaskSpec


def _from_base64(value: object) -> object:
    return base64.b64decode(value, validate=True) if isinstance(value, str) else value


# a binary file: bytes in Python, base64 text on the wire
Blob = Annotated[bytes, BeforeValidator(_from_base64),
                 PlainSerializer(lambda b: base64.b64encode(b).decode(), when_used="json")]


class RunCall(BaseModel):
    model_config = ConfigDict(extra="forbid")
    files: dict[str, str]
    blobs: dict[str, Blob] = Field(default_factory=dict)  # binary files earlier runs wrote
    command: str
    limits: Limits
    task: TaskSpec


class RunReply(BaseModel):
    model_config = ConfigDict(extra="forbid")
    result: RunResult
    files: dict[str, str] | None = None  # None: the run changed nothing
    blobs: dict[str, Blob] = Field(default_factory=dict)  # the binary files the run left


class VerifyCall(BaseModel):
    model_config = ConfigDict(extra="forbid")
    files: dict[str, str]
    task: TaskSpec
    clean_run: tuple[str, float] | None = None  # Workspace.clean_run


class NodeInfo(BaseModel):
    """Where one actor runs: its node, host, process and the inner sandbox's choice."""

    node_id: str
    host: str
    pid: int
    mode: str
    provenance: dict[str, object]
