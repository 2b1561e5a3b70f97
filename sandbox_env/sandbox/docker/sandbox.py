"""DockerSandbox: the docker backend's Sandbox, composed of the engine, the warm pool, runner and verifier.

Every run takes a box from the warm pool and every verification creates a fresh one; the
box is removed afterwards, which ends every process the agent's code left behind. The OCI
runtime (runc or runsc, from ``runtime=`` or $SANDBOX_ENV_RUNTIME) is checked against the
engine at start; under a runtime that cannot change a running container's limits (runsc)
boxes are created with their limits, and the pool keeps boxes of the last run's limits.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from typing import Any

from ...models import Limits, RunResult, Verdict
from ...suite.tasks import TaskSpec
from ...workspace import Workspace
from ..base import SandboxUnavailable
from ..outcome import infra_run
from ..reference_bank import ReferenceBank
from ..verification import infra_verdict
from .containers import LABEL_OWNER, LABEL_ROLE, RUNNER_IMAGE, Box, create_box, limit_key, reap
from .engine import ContainerError, Engine, connect, engine_status
from .pool import WarmPool
from .runner import run_command
from .runtime import RuntimeReport, check_registered, probe_runtime, resolve_runtime, traits
from .verifier import verify_in, verify_limits

log = logging.getLogger(__name__)


class DockerSandbox:
    """Runs and verifies in throwaway containers (see the package docstring)."""

    mode = "docker"

    def __init__(self, image: str = RUNNER_IMAGE, owner: str | None = None, pool_size: int = 2,
                 client: Any = None, runtime: str | None = None) -> None:
        self.runtime = resolve_runtime(runtime)  # raises UnknownRuntime before any connection
        self.client, self.image = connect(image, client)
        check_registered(self.client, self.runtime)
        self._traits = traits(self.runtime)
        self.image_name = image
        self.owner = owner or f"sbx-{uuid.uuid4().hex[:12]}"
        self._engine = Engine(self.client)
        # Limits the pool's boxes are created with: None (narrowed per run) unless the
        # runtime cannot narrow, then the last run's limits (the task's, usually).
        self._pool_limits: Limits | None = None if self._traits.can_update else Limits()
        self._pool = WarmPool(lambda: self._create("run", self._pool_limits), pool_size,
                              self._engine.errors)
        self._report: RuntimeReport | None = None
        self.bank = ReferenceBank(self.provenance())  # reference results by draw, host-side
        self._report_lock = threading.Lock()
        leftovers = reap(self.client, self.owner)  # a previous run of this owner crashed
        if leftovers:
            log.warning("reaped %d leftover container(s) of %s", leftovers, self.owner)
        self._pool.refill()

    # -- lifecycle (SandboxBackend) -------------------------------------------------------
    @classmethod
    def available(cls) -> tuple[bool, str]:
        return engine_status()

    @classmethod
    def create(cls, *, owner: str | None = None) -> DockerSandbox:
        ok, why = engine_status()  # a quick probe before the patient connection
        if not ok:
            raise SandboxUnavailable(why)
        return cls(owner=owner)

    @classmethod
    def cleanup(cls, owner: str | None = None) -> int:
        import docker

        try:
            client = docker.from_env(timeout=30)
        except Exception as exc:
            raise SandboxUnavailable(f"Docker engine not reachable: {exc}") from exc
        return reap(client, owner)

    def provenance(self) -> dict[str, Any]:
        labels = self.image.labels or {}
        return {"image": self.image.id, "torch": labels.get("org.sandbox-env.torch"),
                "runtime": self.runtime}

    def runtime_report(self) -> RuntimeReport:
        """The runtime, its version and whether it is in effect (probed once, in a container)."""
        with self._report_lock:
            if self._report is None:
                self._report = probe_runtime(self.client, self.image_name, self.runtime,
                                             {LABEL_OWNER: self.owner, LABEL_ROLE: "probe"})
            return self._report

    def _create(self, role: str, limits: Limits | None = None) -> Box:
        return create_box(self.client, self.image_name, self.owner, role, runtime=self.runtime,
                          limits=limits)

    def _take(self, limits: Limits) -> Box:
        """A run box with ``limits`` in force or narrowable to them."""
        if self._traits.can_update:
            return self._pool.take()
        self._pool_limits = limits  # refills from now on match this run's limits
        box = self._pool.take()
        if box.limits != limit_key(limits):
            self._pool.destroy(box)
            box = self._create("run", limits)
        return box

    def close(self) -> None:
        self._pool.close()
        try:
            reap(self.client, self.owner)
        except Exception as exc:  # engine gone: the next start of this owner reaps
            log.warning("could not reap %s on close: %s", self.owner, exc)

    # -- Sandbox ------------------------------------------------------------------------------
    def run(self, workspace: Workspace, command: str, limits: Limits, task: TaskSpec) -> RunResult:
        """Run ``command``; raises SandboxUnavailable when the engine is unreachable."""
        engine = self._engine
        try:
            with engine.failures("could not start a sandbox container"):
                box = self._take(limits)
            try:
                with engine.failures("docker error", engine.errors.DockerException):
                    return run_command(self.client.api, box, workspace, command, limits,
                                       api_error=engine.errors.APIError)
            finally:
                self._pool.destroy(box)
        except ContainerError as exc:
            return infra_run(command, str(exc), "docker")

    def verify(self, workspace: Workspace, task: TaskSpec) -> Verdict:
        """Run the hidden checks; raises SandboxUnavailable when the engine is unreachable."""
        engine = self._engine
        try:
            t0 = time.monotonic()
            with engine.failures("could not start a verification container"):
                box = self._create("verify", None if self._traits.can_update else verify_limits(task))
            started = time.monotonic()
            try:
                with engine.failures("docker error during verification", engine.errors.DockerException):
                    verdict = verify_in(self.client.api, box, workspace, task, self.bank)
            finally:
                t1 = time.monotonic()
                self._pool.destroy(box)
            phases = verdict.evidence.setdefault("phases_s", {})
            phases.update(container_start=round(started - t0, 3), teardown=round(time.monotonic() - t1, 3))
            return verdict
        except ContainerError as exc:
            return infra_verdict(str(exc), "docker")
