"""The docker backend: throwaway locked-down containers through the Docker SDK.

One container per run (from a warm pool), one fresh container per verification. Commands
run under an in-container `timeout -s KILL` (kills the whole process group) with an outer
watchdog that kills the container; the container is removed afterwards, which ends every
process left. Rooms, one job each:

    engine.py      the engine: connect, probe, engine-down vs one broken container
    runtime.py     the OCI runtime (runc or gVisor's runsc): chosen, registered, probed, its traits
    containers.py  the container spec and limits, creating, narrowing, reaping
    archive.py     files in and out of a container (tar streams)
    pool.py        the warm pool of idle run containers
    runner.py      one command: time limits, watchdog, output cap, OOM probe, files back
    verifier.py    one verification: hidden checks in root-only /checks, the nonce
    sandbox.py     DockerSandbox, which composes them (and its lifecycle class methods)

Only this package talks to Docker.
"""

from __future__ import annotations

from .containers import LABEL_OWNER, LABEL_ROLE, RUNNER_IMAGE, labelled, reap
from .engine import engine_status as docker_available
from .sandbox import DockerSandbox

__all__ = ["LABEL_OWNER", "LABEL_ROLE", "RUNNER_IMAGE", "DockerSandbox", "docker_available", "labelled",
           "reap"]
