"""The OCI runtime of the sandbox containers: runc (the engine's default) or gVisor's runsc.

``resolve_runtime`` picks the name (argument, else ``SANDBOX_ENV_RUNTIME``, else runc) and
rejects unknown names; ``check_registered`` rejects a runtime the engine does not list, at
start, with the fix in the message. ``probe_runtime`` answers whether the runtime is really
in effect, from inside a container: gVisor's kernel prints "Starting gVisor" in dmesg and
reports its own kernel release, runc shows the host's kernel. ``RuntimeTraits`` says what
the rest of the backend must do differently under a runtime (measured: see docs/runsc.md).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel

from ..base import SandboxUnavailable

RuntimeName = Literal["runc", "runsc"]
RUNTIMES: tuple[RuntimeName, ...] = ("runc", "runsc")
RUNTIME_ENV = "SANDBOX_ENV_RUNTIME"
DEFAULT_RUNTIME: RuntimeName = "runc"
SETUP_HINT = "install and register it with `bash scripts/runsc.sh` (then restart this server)"
# One line each: the kernel identity, then dmesg's first line (gVisor lets any uid read it).
PROBE_COMMAND = ["sh", "-c", "uname -sr; dmesg 2>/dev/null | head -n 1; echo probe-end"]
PROBE_END = "probe-end"


class UnknownRuntime(SandboxUnavailable):
    """A runtime name this project does not know (a usage error: docker mode cannot start)."""


@dataclass(frozen=True)
class RuntimeTraits:
    """How the backend adapts to a runtime.

    ``can_update``: ``docker update`` of a running container's limits works (runsc of
    Debian bookworm has no ``update`` subcommand, so containers get their limits at creation).
    ``data_limit_via_as``: RLIMIT_DATA is not enforced, so a task's data cap becomes an
    RLIMIT_AS of the cap plus ``as_overhead_mb`` (the non-data mappings of a torch process:
    shared libraries and stack, ~425 MB measured under gVisor with the runner image).
    ``container_dies_on_oom``: the memory cgroup's OOM killer kills the whole sandbox (the
    gVisor kernel holds every process's memory), not one process; there is no cgroupfs
    inside, and the engine leaves an exec's stream open after the container died.
    ``nproc_limit`` / ``host_pids_limit``: under runsc the engine's pids limit caps the
    sandbox kernel's host threads (~2 per guest process with the ptrace platform), and
    reaching it kills the whole sandbox; so the guest's process count is capped with
    RLIMIT_NPROC (counted by the gVisor kernel, per sandbox: EAGAIN, the container survives)
    and the host limit is raised to a backstop. Under runc RLIMIT_NPROC would count the uid
    across the host, so the pids cgroup stays the cap there.
    ``sandbox_lost_marker``: text the runtime's exec prints when the sandbox died under it
    (runsc: ``urpc method "containerManager.WaitPID" failed: EOF``); that stream can end
    before the container is seen stopped, and means the same as the stop.
    """

    can_update: bool
    data_limit_via_as: bool
    as_overhead_mb: int
    container_dies_on_oom: bool
    nproc_limit: int | None = None
    host_pids_limit: int | None = None
    sandbox_lost_marker: str | None = None


TRAITS: dict[str, RuntimeTraits] = {
    "runc": RuntimeTraits(can_update=True, data_limit_via_as=False, as_overhead_mb=0,
                          container_dies_on_oom=False),
    "runsc": RuntimeTraits(can_update=False, data_limit_via_as=True, as_overhead_mb=448,
                           container_dies_on_oom=True, nproc_limit=512, host_pids_limit=4096,
                           sandbox_lost_marker='urpc method "containerManager.'),
}


def traits(name: str) -> RuntimeTraits:
    """The traits of ``name`` (an unknown name gets runc's: the engine's default behaviour)."""
    return TRAITS.get(name, TRAITS["runc"])


class RuntimeReport(BaseModel):
    """What `doctor` and /health say about the runtime."""

    name: str
    version: str | None = None
    in_effect: bool | None = None  # None: not probed (or the probe failed: see detail)
    kernel: str | None = None  # as seen from inside a sandbox container
    detail: str = ""


def resolve_runtime(name: str | None = None) -> RuntimeName:
    """``name``, else $SANDBOX_ENV_RUNTIME, else runc; raises UnknownRuntime for other names."""
    chosen = (name or os.environ.get(RUNTIME_ENV) or DEFAULT_RUNTIME).strip()
    if chosen not in RUNTIMES:
        source = "--runtime" if name else RUNTIME_ENV
        raise UnknownRuntime(f"unknown container runtime {chosen!r} (from {source}): "
                             f"choose one of {', '.join(RUNTIMES)}")
    return chosen  # type: ignore[return-value]


def registered_runtimes(client: Any) -> dict[str, Any]:
    """The engine's runtimes by name (``docker info``), each with its path."""
    return dict(client.info().get("Runtimes") or {})


def check_registered(client: Any, name: str) -> None:
    """Raise SandboxUnavailable unless the engine lists ``name`` among its runtimes."""
    known = registered_runtimes(client)
    if name not in known:
        raise SandboxUnavailable(
            f"container runtime {name!r} is not registered with the Docker engine (it lists "
            f"{', '.join(sorted(known)) or 'none'}): " + (SETUP_HINT if name == "runsc" else
                                                           "check the engine's daemon.json"))


def runtime_version(client: Any, name: str) -> str | None:
    """The runtime's version: runc from the engine, runsc from its binary when visible here."""
    if name == "runc":
        for comp in client.version().get("Components") or []:
            if comp.get("Name") == "runc":
                return str(comp.get("Version"))
        return None
    path = (registered_runtimes(client).get(name) or {}).get("path") or shutil.which(name)
    if not path or not (os.path.exists(path) or shutil.which(path)):
        return None  # the server runs in a container without the host's binary
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10,
                             check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    first = out.splitlines()[0] if out else ""
    return first.removeprefix(f"{os.path.basename(path)} version ").strip() or None


def classify_probe(name: str, output: str, host_kernel: str | None) -> tuple[bool, str]:
    """(in effect?, kernel identity) from the probe's output and the engine's kernel release."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    kernel = lines[0] if lines else ""
    gvisor = any("gVisor" in ln for ln in lines)
    if name == "runsc":
        return gvisor, kernel + (" (gVisor)" if gvisor else "")
    same_kernel = bool(host_kernel) and kernel.endswith(str(host_kernel))
    return (not gvisor) and same_kernel, kernel


def probe_runtime(client: Any, image: str, name: str, labels: dict[str, str]) -> RuntimeReport:
    """Run the probe in a throwaway container of ``name``; never raises."""
    report = RuntimeReport(name=name)
    try:
        report.version = runtime_version(client, name)
    except Exception as exc:  # a version is nice to have, not a reason to fail
        report.detail = f"version unknown ({exc}); "
    ct = None
    try:
        ct = client.containers.create(
            image, command=PROBE_COMMAND, runtime=name, network_mode="none", read_only=True,
            user="1000", cap_drop=["ALL"], security_opt=["no-new-privileges"], mem_limit="256m",
            pids_limit=traits(name).host_pids_limit or 64, labels=labels)
        ct.start()
        ct.wait(timeout=60)
        for _ in range(20):  # under runsc the last lines can reach the log after the exit
            out = ct.logs(stdout=True, stderr=True).decode(errors="replace")
            if PROBE_END in out:
                break
            time.sleep(0.1)
        out = out.replace(PROBE_END, "")
        ok, kernel = classify_probe(name, out, client.info().get("KernelVersion"))
        report.in_effect, report.kernel = ok, kernel
        report.detail += ("gVisor kernel answers inside the container" if name == "runsc" and ok else
                          "the host kernel answers inside the container" if ok else
                          f"probe did not show {name}: {out.strip()[-200:]!r}")
    except Exception as exc:
        report.detail += f"probe failed: {exc}"
    finally:
        if ct is not None:
            try:
                ct.remove(force=True)
            except Exception:
                pass
    return report
