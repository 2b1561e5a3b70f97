"""Running one command in a box: the in-container time limit, the outer watchdog, the output cap.

A command runs under ``timeout -s KILL`` (which kills its whole process group) with a
watchdog that kills the container if even that hangs; output is streamed through one
``OutputCap`` and the container is killed past ``HARD_OUTPUT_CAP`` bytes. ``run_command``
is the docker half of ``Sandbox.run``: workspace in, command, OOM probe, changed files back.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from ...models import Limits, RunResult
from ...workspace import Workspace
from ..outcome import OutputCap, run_result
from .archive import get_text_files, put_files
from .containers import CHECKS_DIR, SANDBOX_UID, WORKSPACE_DIR, Box, narrow, run_env
from .runtime import traits

MB = 1024 * 1024

HARD_OUTPUT_CAP = 8_000_000  # bytes read from a command before the container is killed
WATCHDOG_GRACE_S = 10.0  # after the in-container limit, before the container is killed
OOM_CONTROL = "/sys/fs/cgroup/memory/memory.oom_control"
CONTAINER_POLL_S = 1.0  # how often the watchdog looks at a runsc container's state
SANDBOX_LOST_WAIT_S = 10.0  # how long a stream that says its sandbox died waits for the stop


@dataclass
class Exec:
    """What one exec did: exit code (None on timeout), capped output, timer, seconds."""

    exit_code: int | None
    output: str
    timed_out: bool
    duration_s: float


def _running(box: Box) -> bool:
    try:
        box.container.reload()
        return bool(box.container.status == "running")
    except Exception:  # gone, or the engine is: stop waiting on its stream either way
        return False


def _sandbox_died(box: Box, output: str) -> bool:
    """Whether an exec's stream ended because its whole container died (a runtime that kills
    the sandbox on OOM): the container has stopped, or runsc's exec said it lost the sandbox
    (its text names the sandbox's control server), in which case the stop follows shortly."""
    lost = traits(box.runtime).sandbox_lost_marker
    if lost is None:
        return False
    deadline = time.monotonic() + (SANDBOX_LOST_WAIT_S if lost in output[-2000:] else 0.0)
    while _running(box):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.2)
    return True


def _watchdog(box: Box, timeout_s: float, *, done: threading.Event, killed: threading.Event,
              died: threading.Event, stream: Any) -> None:
    """Kill the container past the grace period; under a runtime whose whole container dies
    on OOM (runsc), also end the exec stream once the container has stopped, which the
    engine does not do for that runtime (the stream would stay open for good)."""
    poll = traits(box.runtime).container_dies_on_oom
    deadline = time.monotonic() + timeout_s + WATCHDOG_GRACE_S
    while not done.wait(CONTAINER_POLL_S if poll else max(0.0, deadline - time.monotonic())):
        if not killed.is_set() and time.monotonic() >= deadline:
            killed.set()
            try:
                box.container.kill()
            except Exception:
                pass
            if not poll:
                return
        if poll and not _running(box):
            died.set()
            stream.close()
            return


def exec_capped(api: Any, box: Box, argv: list[str], *, user: str, env: dict[str, str],
                timeout_s: float, output_limit: int, stdin: bytes | None = None,
                wrap_timeout: bool = True) -> Exec:
    """Run argv in the box under `timeout -s KILL` (``wrap_timeout``; else the watchdog's
    container kill alone ends it), streaming output through the cap."""
    wrapped = ["timeout", "-s", "KILL", str(int(timeout_s)), *argv] if wrap_timeout else list(argv)
    if stdin is not None:  # the nonce: written to a root-only file, fed by the shell
        wrapped = ["sh", "-c", 'exec "$@" < /checks/.nonce', "sh", *wrapped]
        put_files(box, CHECKS_DIR, {".nonce": stdin}, 0, 0o600)
    ex = api.exec_create(box.container.id, wrapped, user=user, environment=env,
                         workdir=WORKSPACE_DIR, stdout=True, stderr=True)
    start = time.monotonic()
    done, killed, died = threading.Event(), threading.Event(), threading.Event()
    stream = api.exec_start(ex["Id"], stream=True, demux=False)
    threading.Thread(target=_watchdog, args=(box, timeout_s), daemon=True,
                     kwargs={"done": done, "killed": killed, "died": died, "stream": stream}).start()
    cap = OutputCap(output_limit)
    try:
        for chunk in stream:
            cap.feed(chunk)
            if cap.size > HARD_OUTPUT_CAP:
                box.container.kill()
                cap.feed(b"\n[sandbox] output flood: container killed\n")
                break
    except Exception:
        if not died.is_set():  # our own close() of the stream ends the read with an error
            raise
    finally:
        done.set()
    secs = time.monotonic() - start
    if not died.is_set() and _sandbox_died(box, cap.text()):  # the stream beat the watchdog
        died.set()
    if died.is_set():  # the whole container was killed: its execs are gone with it
        code = None if killed.is_set() else 137
    else:
        code = api.exec_inspect(ex["Id"]).get("ExitCode")
    timed_out = killed.is_set() or (code == 137 and secs >= timeout_s - 0.5)
    return Exec(None if timed_out else code, cap.text(), timed_out, secs)


def oom_kills(box: Box) -> int:
    """How many processes the container's memory cgroup has OOM-killed (0 if unknown).

    Under runsc there is no cgroupfs inside and the OOM killer takes the whole sandbox:
    the engine's ``State.OOMKilled`` of the stopped container says it (1 or 0).
    """
    if traits(box.runtime).container_dies_on_oom:
        try:
            box.container.reload()
            return int(bool(box.container.attrs["State"].get("OOMKilled")))
        except Exception:
            return 0
    try:
        r = box.container.exec_run(["cat", OOM_CONTROL], user="0")
        for line in r.output.decode().splitlines():
            if line.startswith("oom_kill "):
                return int(line.split()[1])
    except Exception:
        pass
    return 0


def _as_cap(runtime: str, data_mb: int | None) -> list[str]:
    """``prlimit``'s RLIMIT_AS flag standing in for a data cap the runtime does not enforce
    (runsc): the cap plus the non-data mappings of a torch process; none otherwise."""
    t = traits(runtime)
    return [f"--as={(data_mb + t.as_overhead_mb) * MB}"] if data_mb and t.data_limit_via_as else []


def data_limit_prefix(runtime: str, data_mb: int) -> list[str]:
    """``prlimit`` arguments for a task's data cap: RLIMIT_DATA, and under a runtime that does
    not enforce it (runsc) also ``_as_cap`` (RLIMIT_DATA stays set there too: the limits agent
    code reads are the check's)."""
    return ["prlimit", *_as_cap(runtime, data_mb), f"--data={data_mb * MB}", "--"]


def inherited_data_cap(runtime: str, data_mb: int | None) -> list[str]:
    """``prlimit`` arguments that make a data cap hold for a whole process tree under a runtime
    that ignores RLIMIT_DATA (runsc: ``_as_cap``, which every descendant inherits and cannot
    raise); nothing under runc, or without a cap. A verification's check runs under it, so the
    runs of agent code it starts (each also given ``prlimit --data``, as the agent's own are)
    meet the cap the agent's own runs meet."""
    flag = _as_cap(runtime, data_mb)
    return ["prlimit", *flag, "--"] if flag else []


def run_command(api: Any, box: Box, workspace: Workspace, command: str, limits: Limits, *,
                api_error: type[Exception]) -> RunResult:
    """Run ``command`` over a copy of ``workspace`` in ``box``; changed files are synced back."""
    narrow(box, limits)
    put_files(box, WORKSPACE_DIR, {**{p: t.encode() for p, t in workspace.files.items()}, **workspace.blobs},
              SANDBOX_UID)
    argv = ["bash", "-c", command]
    if limits.data_mb:
        argv = [*data_limit_prefix(box.runtime, limits.data_mb), *argv]
    ex = exec_capped(api, box, argv, user=str(SANDBOX_UID), env=run_env(limits),
                     timeout_s=limits.timeout_s, output_limit=limits.output_bytes)
    oom = ex.exit_code == 137 and not ex.timed_out and oom_kills(box) > 0
    changed: dict[str, str] = {}
    notes: list[str] = []
    try:
        after, blobs, skipped, notes = get_text_files(box, WORKSPACE_DIR)
        notes += workspace.take_blobs(blobs)
        changed = workspace.sync(after, skipped)
    except api_error as exc:
        notes.append(f"could not copy files back ({getattr(exc, 'explanation', None) or exc})")
    return run_result(command, ex.output, exit_code=ex.exit_code, timed_out=ex.timed_out,
                      oom_killed=oom, duration_s=ex.duration_s, changed_files=changed, notes=notes,
                      source="docker")
