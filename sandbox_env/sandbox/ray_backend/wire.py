"""What crosses the cluster: one call to a node's sandbox and its reply, as pydantic models.

Each call carries the whole workspace (its files) and the task's spec; the reply carries the
RunResult or Verdict and, after a run that changed files, the workspace's files as the node
left them, so the driver's workspace ends equal to what an in-process backend would leave.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from ...models import Limits, RunResult
from ...suite.tasks import TaskSpec


class RunCall(BaseModel):
    model_config = ConfigDict(extra="forbid")
    files: dict[str, str]
    command: str
    limits: Limits
    task: TaskSpec


class RunReply(BaseModel):
    model_config = ConfigDict(extra="forbid")
    result: RunResult
    files: dict[str, str] | None = None  # None: the run changed nothing


class VerifyCall(BaseModel):
    model_config = ConfigDict(extra="forbid")
    files: dict[str, str]
    task: TaskSpec


class NodeInfo(BaseModel):
    """Where one actor runs: its node, host, process and the inner sandbox's choice."""

    node_id: str
    host: str
    pid: int
    mode: str
    provenance: dict[str, object]
