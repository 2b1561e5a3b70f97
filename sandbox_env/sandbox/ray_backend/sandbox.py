"""The driver side of ray mode: a pool of node actors behind one Sandbox.

``RaySandbox`` keeps one actor on every alive node that offers ``sandbox_slots`` (pinned to
it, holding all N of its slots and serving N calls at once), hands each run or verification
to the node with the most free slots, and starts an actor on every node that joins. Any fault of the cluster
(a node that died, an actor that was killed, a lost connection, a call past its deadline, an
inner backend that raised) is a result with ``outcome == infra_error``: the environment does
not score it and the eval runner retries the episode. The actor is dropped (killed if still
there) and a replacement is asked for, which Ray places on a surviving or a later node.

No leaks: each node's boxes are labelled ``owner@node`` (actor.node_owner); closing closes
every actor's inner sandbox (it reaps its own), then reaps the labels of the actors lost on
the way from a live node of their host; ``cleanup`` (a killed driver, ``sandbox-env reap``)
reaps an owner on every host that has a live node, the host's dead nodes' labels included.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any

from ...errors import SandboxUnavailable
from ...models import Limits, Outcome, RunResult, Verdict
from ...suite.tasks import TaskSpec
from ...workspace import Workspace
from ..outcome import infra_run
from ..registry import AUTO, mode_choices
from ..verification import CHECK_BUDGET_S
from . import ADDRESS_ENV, INNER_ENV, MODE, SLOT_RESOURCE
from .wire import NodeInfo, RunCall, RunReply, VerifyCall

log = logging.getLogger(__name__)

NAMESPACE = "sandbox-env"
CALL_MARGIN_S = 120.0  # a run's deadline beyond its own timeout (container start, transfer)
ACQUIRE_TIMEOUT_S = 60.0  # how long a call waits for a free slot before it is an infra error
SCALE_EVERY_S = 1.0
START_TIMEOUT_S = 60.0  # how long create() waits for the actors of the nodes already there


@dataclass
class _Node:
    """The one actor of one node: it holds all the node's slots and serves that many calls."""

    node_id: str
    actor: Any
    capacity: int
    ready: Any  # ObjectRef of info() until the actor is up, then None
    info: NodeInfo | None = None
    busy: int = 0


class RaySandbox:
    """Sandboxes on a Ray cluster's nodes (see the module docstring)."""

    mode = MODE

    def __init__(self, address: str, inner: str, owner: str, *,
                 acquire_timeout_s: float = ACQUIRE_TIMEOUT_S) -> None:
        import ray

        self.address, self.inner, self.owner = address, inner, owner
        self.acquire_timeout_s = acquire_timeout_s
        self._ray = ray
        self._owns_ray = not ray.is_initialized()
        if self._owns_ray:
            try:
                ray.init(address=address, namespace=NAMESPACE, log_to_driver=False,
                         logging_level=logging.ERROR, configure_logging=False)
            except Exception as exc:
                raise SandboxUnavailable(f"cannot join the Ray cluster at {address}: {exc}") from exc
        from .actor import NodeSandbox

        self._actor_cls = ray.remote(num_cpus=0, max_restarts=0, max_task_retries=0)(NodeSandbox)
        self._cond = threading.Condition()
        self._nodes: dict[str, _Node] = {}
        self._last_scale = 0.0
        self._closed = False
        self.dropped = 0  # actors lost to faults (for records and tests)
        self._lost: set[str] = set()  # the nodes those actors ran on (reaped at close)
        deadline = time.monotonic() + START_TIMEOUT_S
        with self._cond:  # the nodes there now start their actors, so the first calls spread
            self._scale()
            while any(n.ready is not None for n in self._nodes.values()) and time.monotonic() < deadline:
                self._cond.wait(timeout=0.1)
                self._scale()
        if not self._nodes:
            self.close()
            raise SandboxUnavailable(f"no node of the Ray cluster at {address} offers {SLOT_RESOURCE}; "
                                     f"start nodes with --resources '{{\"{SLOT_RESOURCE}\": N}}'")

    # -- lifecycle (SandboxBackend) -------------------------------------------------------
    @classmethod
    def available(cls) -> tuple[bool, str]:
        try:
            import ray  # noqa: F401
        except ImportError:
            return False, "Ray is not installed (pip install 'sandbox-env[ray]')"
        address = os.environ.get(ADDRESS_ENV)
        if not address:
            return False, f"no cluster given (--ray ADDRESS or {ADDRESS_ENV})"
        return True, f"sandboxes on the Ray cluster at {address} ({os.environ.get(INNER_ENV, AUTO)} per node)"

    @classmethod
    def _settings(cls) -> tuple[str, str]:
        ok, why = cls.available()
        if not ok:
            raise SandboxUnavailable(why)
        inner = os.environ.get(INNER_ENV, AUTO)
        allowed = [m for m in mode_choices(untrusted=True) if m != MODE]
        if inner not in allowed:
            raise SandboxUnavailable(f"the inner mode {inner!r} is not one of {', '.join(allowed)}")
        return os.environ[ADDRESS_ENV], inner

    @classmethod
    def create(cls, *, owner: str | None = None) -> RaySandbox:
        address, inner = cls._settings()
        return cls(address, inner, owner or f"ray-{os.getpid()}-{uuid.uuid4().hex[:6]}")

    @classmethod
    def cleanup(cls, owner: str | None = None) -> int:
        """Reap ``owner``'s sandboxes (every sandbox-env one when None) on every host that has
        an alive node: those of its alive nodes and of the dead nodes it had before."""
        address, inner = cls._settings()
        import ray

        owned = not ray.is_initialized()
        if owned:
            ray.init(address=address, namespace=NAMESPACE, log_to_driver=False,
                     logging_level=logging.ERROR, configure_logging=False)
        try:
            return _reap(ray, inner, owner)
        finally:
            # A driver left connected exits by itself once its cluster is gone (Ray's GCS
            # reconnect timeout): never leave the caller's process attached to a cluster.
            if owned:
                ray.shutdown()

    # -- the pool ---------------------------------------------------------------------------
    def _scale(self) -> None:
        """(Under the lock.) Take the actors that came up; start one on each node that joined."""
        ray = self._ray
        pending = [n for n in self._nodes.values() if n.ready is not None]
        if pending:
            done, _ = ray.wait([n.ready for n in pending], num_returns=len(pending), timeout=0)
            for n in [n for n in pending if n.ready in done]:
                try:
                    n.info = NodeInfo.model_validate_json(ray.get(n.ready))
                    n.ready = None
                except Exception as exc:  # its node died first, or the inner backend cannot work there
                    log.warning("ray: the sandbox actor on node %s did not start: %s", n.node_id[:8], exc)
                    self._drop(n)
        now = time.monotonic()
        if now - self._last_scale < SCALE_EVERY_S:
            return
        self._last_scale = now
        try:
            alive = {n["NodeID"]: int(n.get("Resources", {}).get(SLOT_RESOURCE, 0))
                     for n in ray.nodes() if n.get("Alive")}
        except Exception as exc:
            log.warning("ray: cannot list the cluster's nodes: %s", exc)
            return
        for node_id in [i for i in self._nodes if i not in alive]:
            self._drop(self._nodes[node_id])
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        for node_id, slots in alive.items():
            if slots < 1 or node_id in self._nodes:
                continue
            actor = self._actor_cls.options(
                resources={SLOT_RESOURCE: slots}, max_concurrency=slots,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
            ).remote(self.inner, self.owner)
            self._nodes[node_id] = _Node(node_id, actor, slots, actor.info.remote())

    def _acquire(self) -> _Node | None:
        deadline = time.monotonic() + self.acquire_timeout_s
        with self._cond:
            while True:
                if self._closed:
                    return None
                self._scale()
                free = [n for n in self._nodes.values() if n.ready is None and n.busy < n.capacity]
                if free:
                    node = max(free, key=lambda n: n.capacity - n.busy)
                    node.busy += 1
                    return node
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                waiting = any(n.ready is not None for n in self._nodes.values())
                self._cond.wait(timeout=min(0.05 if waiting else SCALE_EVERY_S, left))

    def _release(self, node: _Node) -> None:
        with self._cond:
            node.busy -= 1
            self._cond.notify()

    def _drop(self, node: _Node) -> None:
        """(Under the lock.) Forget a faulty actor, killed if still there; its node, if alive,
        gets a new one at the next scale (whose inner backend reaps what the old one left)."""
        if self._nodes.get(node.node_id) is node:
            del self._nodes[node.node_id]
            self._lost.add(node.node_id)
            self.dropped += 1
            self._last_scale = 0.0
            self._kill(node)

    def _kill(self, node: _Node) -> None:
        try:
            self._ray.kill(node.actor, no_restart=True)
        except Exception:
            pass

    def _call(self, method: str, payload: str, timeout_s: float) -> tuple[str | None, str]:
        """(reply JSON, "") or (None, why it is an infra error)."""
        node = self._acquire()
        if node is None:
            why = "closed" if self._closed else f"no sandbox slot free within {self.acquire_timeout_s:.0f}s"
            return None, f"[ray] the cluster could not take the call: {why}"
        where = node.info.host if node.info else "?"
        try:
            reply = self._ray.get(getattr(node.actor, method).remote(payload), timeout=timeout_s)
        except Exception as exc:  # RayActorError, node death, GetTimeoutError, a lost connection
            with self._cond:
                node.busy -= 1
                self._drop(node)
                self._cond.notify()
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            return None, (f"[ray] the sandbox on node {node.node_id[:8]} ({where}) failed: "
                          f"{type(exc).__name__}: {first}")
        self._release(node)
        return reply, ""

    # -- Sandbox ------------------------------------------------------------------------------
    def run(self, workspace: Workspace, command: str, limits: Limits, task: TaskSpec) -> RunResult:
        call = RunCall(files=workspace.files, blobs=workspace.blobs, command=command, limits=limits,
                       task=task)
        reply, why = self._call("run", call.model_dump_json(), limits.timeout_s + CALL_MARGIN_S)
        if reply is None:
            return infra_run(command, why, source=MODE)
        try:
            out = RunReply.model_validate_json(reply)
        except ValueError as exc:
            return infra_run(command, f"[ray] unreadable reply: {exc}", source=MODE)
        if out.files is not None:
            workspace.sync(out.files)
        workspace.blobs = dict(out.blobs)
        return out.result

    def verify(self, workspace: Workspace, task: TaskSpec) -> Verdict:
        call = VerifyCall(files=workspace.files, task=task, clean_run=workspace.clean_run)
        reply, why = self._call("verify", call.model_dump_json(), CHECK_BUDGET_S + CALL_MARGIN_S)
        if reply is not None:
            try:
                return Verdict.model_validate_json(reply)
            except ValueError as exc:
                why = f"[ray] unreadable verdict: {exc}"
        return Verdict(passed=False, outcome=Outcome.infra_error, source=MODE, reasons=[why])

    def provenance(self) -> dict[str, Any]:
        with self._cond:
            infos = [n.info for n in self._nodes.values() if n.info]
        out: dict[str, Any] = {"inner": self.inner, "address": self.address,
                               "nodes": sorted(i.node_id for i in infos)}
        if infos:
            out.update({k: v for k, v in infos[0].provenance.items() if k in ("image", "torch")})
            out["inner_mode"] = infos[0].mode
        return out

    def nodes(self) -> dict[str, int]:
        """Slots of every node whose actor is up (tests, bench)."""
        with self._cond:
            self._scale()
            return {n.node_id: n.capacity for n in self._nodes.values() if n.ready is None}

    def close(self) -> None:
        """Close every node's inner sandbox (it reaps its own boxes), kill the actors, and reap
        what the actors lost to faults left (on their hosts, where a node of the host lives)."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            nodes = list(self._nodes.values())
            self._nodes = {}
            self._cond.notify_all()
        ray = self._ray
        closing: dict[str, Any] = {}
        try:
            closing = {n.node_id: n.actor.close.remote() for n in nodes if n.ready is None}
            ray.wait(list(closing.values()), num_returns=len(closing), timeout=30)
        except Exception as exc:
            log.warning("ray: closing the sandboxes: %s", exc)
        for n in nodes:
            try:  # an actor that did not close (its node died unnoticed, or it never came up)
                ray.get(closing[n.node_id], timeout=0)  # left its boxes like a lost one
            except Exception:
                self._lost.add(n.node_id)
            self._kill(n)
        if self._lost:  # the boxes that actors lost to faults left, where a node of their host lives
            try:
                n = _reap(ray, self.inner, self.owner, self._lost, timeout_s=120.0)
                log.info("ray: reaped %d box(es) of %d lost sandbox actor(s)", n, len(self._lost))
            except Exception as exc:
                log.warning("ray: reaping after lost sandboxes: %s", exc)
        if self._owns_ray:
            try:
                ray.shutdown()
            except Exception:
                pass


def _reap(ray: Any, inner: str, owner: str | None, lost: set[str] | None = None,
          timeout_s: float = 300.0) -> int:
    """Run one reaper per host with an alive sandbox node, for the owner labels of the nodes
    that host has had (alive or dead; only those in ``lost`` when given): the sandboxes of a
    dead node are removed once a node of its host is alive. A reaper that fails (its node
    died unnoticed, say) is run again on the host's next alive node. Returns what was removed."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from .actor import node_owner, reap_node

    everyone = ray.nodes()
    candidates: dict[str, list[str]] = {}  # host -> its alive nodes that can reap it
    for n in everyone:
        if n.get("Alive") and n.get("Resources", {}).get(SLOT_RESOURCE) and n["NodeID"] not in (lost or ()):
            candidates.setdefault(n.get("NodeManagerAddress", ""), []).append(n["NodeID"])
    owners: dict[str, list[str] | None] = {}
    for host in candidates:
        owners[host] = None if owner is None else [
            node_owner(owner, n["NodeID"]) for n in everyone
            if n.get("NodeManagerAddress", "") == host and (lost is None or n["NodeID"] in lost)]
    task = ray.remote(reap_node)

    def launch(host: str) -> Any:
        if not candidates[host]:
            return None
        node = candidates[host].pop(0)
        return task.options(num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(
            node, soft=False)).remote(inner, owners[host])

    refs = {h: launch(h) for h in candidates if owners[h] != []}
    deadline = time.monotonic() + timeout_s
    removed = 0
    for host, first in refs.items():
        ref = first
        while ref is not None:
            try:
                removed += ray.get(ref, timeout=max(1.0, min(60.0, deadline - time.monotonic())))
                break
            except Exception as exc:
                log.warning("ray: the reaper of host %s failed (%s); trying another node", host, exc)
                ref = launch(host) if time.monotonic() < deadline else None
    return removed
