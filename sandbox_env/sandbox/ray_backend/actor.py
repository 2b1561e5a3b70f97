"""The per-node side of ray mode: one actor per node, driving that node's own backend.

An actor holds all of its node's sandbox slots (the ``sandbox_slots`` resource), serves that
many calls at once, and owns one inner sandbox (docker, process or mock; ``auto`` takes the
node's first working tier) whose owner label is the driver's owner and the node's id
(``node_owner``), so a node's start-up and close reap only its own boxes, also where several
nodes share one Docker engine. Calls come in as JSON of the wire models and go back as JSON,
so nothing but pydantic crosses the cluster. ``reap_node`` is a node's reaper: it removes
what the given owners' actors left there.
"""

from __future__ import annotations

import logging
import os
import platform
from pathlib import Path

from ...errors import SandboxUnavailable
from ...models import Verdict
from ...suite.tasks import TaskRegistry, TaskSpec
from ...workspace import Workspace
from ..registry import AUTO, backend, make_sandbox, tiers
from .wire import NodeInfo, RunCall, RunReply, VerifyCall

log = logging.getLogger(__name__)


def _local_task(task: TaskSpec) -> TaskSpec:
    """The task as this node has it: the driver's path, or this node's task root by id."""
    if task.root.is_dir():
        return task
    return TaskRegistry(Path(os.environ["SANDBOX_ENV_TASK_ROOT"]) if os.environ.get(
        "SANDBOX_ENV_TASK_ROOT") else None).get(task.id)


def node_owner(owner: str, node_id: str) -> str:
    """The owner label of ``owner``'s sandboxes on node ``node_id``."""
    return f"{owner}@{node_id[:12]}"


class NodeSandbox:
    """The sandboxes of one node (made a Ray actor by the driver, see sandbox.py)."""

    def __init__(self, inner: str, owner: str) -> None:
        import ray

        self.sandbox = make_sandbox(inner, owner=node_owner(owner, ray.get_runtime_context().get_node_id()))

    def info(self) -> str:
        import ray

        return NodeInfo(node_id=ray.get_runtime_context().get_node_id(), host=platform.node(),
                        pid=os.getpid(), mode=self.sandbox.mode,
                        provenance=self.sandbox.provenance()).model_dump_json()

    def run(self, payload: str) -> str:
        call = RunCall.model_validate_json(payload)
        ws = Workspace(call.files)
        ws.blobs = dict(call.blobs)
        res = self.sandbox.run(ws, call.command, call.limits, _local_task(call.task))
        return RunReply(result=res, files=ws.files if ws.files != call.files else None,
                        blobs=ws.blobs).model_dump_json()

    def verify(self, payload: str) -> str:
        call = VerifyCall.model_validate_json(payload)
        ws = Workspace(call.files)
        ws.clean_run = call.clean_run
        verdict: Verdict = self.sandbox.verify(ws, _local_task(call.task))
        return verdict.model_dump_json()

    def close(self) -> None:
        self.sandbox.close()


def reap_node(inner: str, owners: list[str] | None) -> int:
    """Remove what the actors of these owner labels left on this node (all of sandbox-env's
    when None). A named inner backend is reaped without a probe first (a loaded engine can miss
    a quick ping) and a failure is logged and tried once more; ``auto`` reaps every tier that
    answers, quietly skipping the ones this node does not have."""
    names = [b.name for b in tiers()] if inner == AUTO else [inner]
    n = 0
    for name in names:
        try:
            cls = backend(name).load()
        except ImportError as exc:
            if inner != AUTO:
                log.warning("reap %s on %s: %s", name, platform.node(), exc)
            continue
        for owner in [None] if owners is None else owners:
            for attempt in (1, 2):
                try:
                    n += cls.cleanup(owner)
                    break
                except (SandboxUnavailable, ImportError) as exc:  # this node has no such backend
                    if inner == AUTO:
                        break
                    log.warning("reap %s of %s on %s (attempt %d): %s", name, owner, platform.node(),
                                attempt, exc)
                except Exception as exc:  # one backend's engine gone must not hide the others
                    log.warning("reap %s of %s on %s (attempt %d): %s", name, owner, platform.node(),
                                attempt, exc)
    return n
