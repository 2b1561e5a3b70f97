"""Run one child process with caps and measure it from outside: the environment it starts
with (and what a deployment adds to it), RLIMIT_DATA, a timeout that kills its whole process
group, output capped head and tail, peak RSS from ``wait4``.

Standard library only: the check runtime runs agent code with it inside the verifier (it
travels there in ``check_runtime.kit_files()``), and the local sandbox runs commands with it
on the host.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Sets RLIMIT_DATA then execs the real command: no preexec_fn (unsafe with threads).
_LIMIT_TRAMPOLINE = (
    "import os, resource, sys; cap = int(sys.argv[1]); "
    "resource.setrlimit(resource.RLIMIT_DATA, (cap, cap)); os.execvp(sys.argv[2], sys.argv[2:])"
)
_OUTPUT_CAP = 256 * 1024


@dataclass
class ChildResult:
    """What one child process did, measured from outside it."""

    argv: list[str]
    returncode: int | None  # None when killed by our timeout
    signal: int | None  # terminating signal, if any
    output: str  # merged stdout+stderr, capped (head and tail kept)
    peak_rss_mb: float  # peak RSS of the child (and the descendants it waited for)
    duration_s: float
    timed_out: bool

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def tail(self, n: int = 15) -> str:
        return "\n".join(self.output.rstrip().splitlines()[-n:])


def child_env(home: Path | str, *, threads: int = 1, path: str | None = None,
              extra: dict[str, str] | None = None) -> dict[str, str]:
    """The minimal environment a child starts with: nothing inherited but ``PATH``.

    ``home`` is its HOME and TMPDIR, ``threads`` its OpenMP/MKL thread count, ``path`` its
    PATH (default: this process's), ``extra`` added last.
    """
    n = str(threads)
    env = {
        "PATH": path if path is not None else os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "OMP_NUM_THREADS": n,
        "MKL_NUM_THREADS": n,
        "GLOO_SOCKET_IFNAME": "lo",
        "TMPDIR": str(home),
    }
    env.update(extra or {})
    return env


def deployment_env(production_dir: str, world: int, rng: Any = None) -> dict[str, str]:
    """What a deployment's environment adds to a child's (values drawn per verification from
    ``rng``, default the system's): the job variables of a Slurm allocation and a Kubernetes
    pod, and a service user. The check's production runs start with it; the mock's analysis
    knows its names (set in production only)."""
    rng = rng or random.SystemRandom()
    user = rng.choice(["train", "mlsvc", "batch", "jobs"])
    return {"USER": user, "LOGNAME": user,
            "SLURM_JOB_ID": str(rng.randint(100000, 9999999)), "SLURM_JOB_NAME": Path(production_dir).name,
            "SLURM_NTASKS": str(max(1, world)), "SLURM_SUBMIT_DIR": production_dir,
            "SLURM_CLUSTER_NAME": rng.choice(["prod", "gpu-a", "cluster1"]),
            "KUBERNETES_SERVICE_HOST": f"10.{rng.randint(0, 200)}.0.1", "KUBERNETES_SERVICE_PORT": "443"}


def _text(data: bytes) -> str:
    """Bytes as text an agent can read: invalid UTF-8 and NUL bytes become U+FFFD."""
    return data.decode(errors="replace").replace("\x00", "\ufffd")


class OutputCap:
    """Keeps the first and last ``limit / 2`` bytes of a stream, counting what falls between."""

    def __init__(self, limit: int) -> None:
        self.half = limit // 2
        self.head = bytearray()
        self.tail = bytearray()
        self.size = 0  # bytes seen

    def feed(self, chunk: bytes) -> None:
        self.size += len(chunk)
        room = self.half - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        self.tail += chunk
        if len(self.tail) > self.half:
            del self.tail[: len(self.tail) - self.half]

    def text(self) -> str:
        dropped = self.size - len(self.head) - len(self.tail)
        if not dropped:
            return _text(bytes(self.head + self.tail))
        return (_text(bytes(self.head))
                + f"\n\n[... output truncated: {dropped} bytes omitted ...]\n\n"
                + _text(bytes(self.tail)))


class _Capture:
    """Drains pipes in threads into one ``OutputCap``."""

    def __init__(self, stream: Any, cap: int) -> None:
        self.cap = OutputCap(cap)
        self.lock = threading.Lock()
        self.threads: list[threading.Thread] = []
        self.add(stream)

    def add(self, stream: Any) -> None:
        """Drain one more stream into the same capture."""
        t = threading.Thread(target=self._pump, args=(stream,), daemon=True)
        self.threads.append(t)
        t.start()

    def _pump(self, stream: Any) -> None:
        while chunk := stream.read1(65536) if hasattr(stream, "read1") else stream.read(65536):
            with self.lock:
                self.cap.feed(chunk)

    def text(self) -> str:
        for t in self.threads:
            t.join(timeout=5)
        with self.lock:
            return self.cap.text()


def run_child(argv: list[str], *, cwd: Path, env: dict[str, str], timeout_s: float,
              data_limit_mb: int | None = None, stdin: bytes | None = None,
              uid: int | None = None, output_cap: int = _OUTPUT_CAP,
              separate_stderr: bool = False) -> ChildResult:
    """Run ``argv`` in a new session; on timeout its whole process group is killed.

    Output (stdout + stderr) is drained while it runs and capped, head and tail kept; peak
    RSS comes from ``wait4``. ``uid`` runs the child as that user and group, with that group as
its supplementary group (the caller is root).
    ``separate_stderr``: stderr is a pipe of its own (as in a ``docker exec``), drained into
    the same capture.
    """
    argv = with_data_limit(argv, data_limit_mb)
    # as a login gets it: the user's own group as its one supplementary group
    drop: dict[str, Any] = {} if uid is None else {"user": uid, "group": uid, "extra_groups": [uid]}
    start = time.monotonic()
    proc = subprocess.Popen(
        argv,
        cwd=str(cwd),
        env=env,
        stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE if separate_stderr else subprocess.STDOUT,
        start_new_session=True,
        **drop,
    )
    if stdin is not None and proc.stdin is not None:
        try:
            proc.stdin.write(stdin)
            proc.stdin.close()
        except BrokenPipeError:
            pass
    cap = _Capture(proc.stdout, output_cap)
    if separate_stderr:
        cap.add(proc.stderr)
    status, usage, timed_out = _wait(proc.pid, start + timeout_s)
    _kill_group(proc.pid)  # stragglers left in the group (e.g. orphaned workers)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return ChildResult(
        argv=argv,
        returncode=None if timed_out else proc.returncode,
        signal=-proc.returncode if proc.returncode < 0 else None,
        output=cap.text(),
        peak_rss_mb=round(usage.ru_maxrss / 1024.0, 1),
        duration_s=round(time.monotonic() - start, 3),
        timed_out=timed_out,
    )


def _wait(pid: int, deadline: float) -> tuple[int, Any, bool]:
    """Reap ``pid`` (wait status, rusage, timed out); past ``deadline`` its group is killed."""
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            return status, usage, False
        if time.monotonic() > deadline:
            _kill_group(pid)
            _, status, usage = os.wait4(pid, 0)
            return status, usage, True
        time.sleep(0.02)


def with_data_limit(argv: list[str], data_limit_mb: int | None) -> list[str]:
    """Prefix ``argv`` so it runs under RLIMIT_DATA = ``data_limit_mb`` (None: unchanged)."""
    if data_limit_mb is None:
        return argv
    cap = str(data_limit_mb * 1024 * 1024)
    # isolated (-I): the trampoline runs in the workspace, whose files (a resource.py, ...) must
    # not shadow the modules it imports
    return [sys.executable, "-I", "-S", "-c", _LIMIT_TRAMPOLINE, cap, *argv]


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
