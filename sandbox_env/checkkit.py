"""Runtime kit for hidden task checks: run agent code as a child, measure it, emit a verdict.

This module is standard-library only. At verification time it is copied next to a task's
``checks/check.py`` (outside the agent's workspace) and imported by it as ``checkkit``.

Protocol between the orchestrator and a check:

* The orchestrator starts ``python check.py --workspace DIR`` and writes a one-line random
  nonce to the check's stdin, then closes it.
* The check never imports agent code in its own process. Agent code runs in children
  (``Check.run``), with stdin closed and stdout/stderr captured, so it cannot write to the
  check's stdout nor read the nonce.
* The check finishes with exactly one line ``SANDBOX_VERDICT <nonce> <json>`` on its own
  stdout. The orchestrator ignores any verdict line that does not carry its nonce.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

VERDICT_TAG = "SANDBOX_VERDICT"
# Sets RLIMIT_DATA then execs the real command: no preexec_fn (unsafe with threads).
_LIMIT_TRAMPOLINE = (
    "import os, resource, sys; cap = int(sys.argv[1]); "
    "resource.setrlimit(resource.RLIMIT_DATA, (cap, cap)); os.execvp(sys.argv[2], sys.argv[2:])"
)
OUTCOMES = ("passed", "failed", "timeout", "oom_killed", "infra_error")
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


class _Capture:
    """Drains a pipe in a thread, keeping the first and last ``cap / 2`` bytes."""

    def __init__(self, stream: Any, cap: int) -> None:
        self.half = cap // 2
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0
        self.thread = threading.Thread(target=self._pump, args=(stream,), daemon=True)
        self.thread.start()

    def _pump(self, stream: Any) -> None:
        half = self.half
        while chunk := stream.read(65536):
            room = half - len(self.head)
            if room > 0:
                self.head += chunk[:room]
                chunk = chunk[room:]
            self.tail += chunk
            if len(self.tail) > half:
                self.dropped += len(self.tail) - half
                del self.tail[: len(self.tail) - half]

    def text(self) -> str:
        self.thread.join(timeout=5)
        mid = f"\n\n[... output truncated: {self.dropped} bytes omitted ...]\n\n" if self.dropped else ""
        text = bytes(self.head).decode(errors="replace") + mid + bytes(self.tail).decode(errors="replace")
        return text.replace("\x00", "\ufffd")  # NUL bytes, like invalid UTF-8, become U+FFFD


@dataclass
class Check:
    """State of one verification: the workspace under test, a scratch dir, the findings."""

    workspace: Path
    check_dir: Path
    scratch: Path
    reasons: list[str] = field(default_factory=list)
    evidence: dict[str, Any] = field(default_factory=dict)
    outcome: str | None = None  # set by fail(); passed when no failure was recorded
    child_uid: int | None = None  # when the check runs as root: children run as this uid
    driver_dir: Path | None = None  # readable copies of the check's *.py for children

    # -- running agent code -------------------------------------------------------------
    def run(
        self,
        argv: list[str],
        *,
        timeout_s: float,
        env: dict[str, str] | None = None,
        data_limit_mb: int | None = None,
        cwd: Path | None = None,
    ) -> ChildResult:
        """Run ``argv`` (``python`` is replaced by this interpreter) in the workspace.

        The child gets a fresh session (its whole process group is killed on timeout),
        no stdin, a minimal environment plus ``env``, and optionally RLIMIT_DATA.
        """
        if argv and argv[0] in ("python", "python3"):
            argv = [sys.executable, *argv[1:]]
        child_env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.scratch),
            "LANG": "C.UTF-8",
            "PYTHONHASHSEED": "0",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONUNBUFFERED": "1",
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "GLOO_SOCKET_IFNAME": "lo",
            "TMPDIR": str(self.scratch),
        }
        child_env.update(env or {})

        uid = None
        if self.child_uid is not None:
            uid = self.child_uid
            self._hand_scratch_to_child()
        return run_child(argv, cwd=cwd or self.workspace, env=child_env, timeout_s=timeout_s,
                         data_limit_mb=data_limit_mb, uid=uid)

    def _hand_scratch_to_child(self) -> None:
        """Let children write where the check prepared files for them (the check runs as root)."""
        assert self.child_uid is not None
        for dirpath, dirnames, filenames in os.walk(self.scratch):
            for name in [dirpath, *(os.path.join(dirpath, n) for n in dirnames + filenames)]:
                os.chown(name, self.child_uid, self.child_uid, follow_symlinks=False)

    def run_driver(self, name: str, *args: str, **kw: Any) -> ChildResult:
        """Run a helper script of the check dir (never in the workspace).

        When children run under another uid the check dir is unreadable to them, so they
        run a copy of the check's Python files; data files (references) stay hidden.
        """
        where = self.driver_dir or self.check_dir
        return self.run(["python", str(where / name), *args], **kw)

    # -- findings ---------------------------------------------------------------------
    def fail(self, reason: str, outcome: str = "failed") -> None:
        """Record a failed requirement; the first non-'failed' outcome wins."""
        self.reasons.append(reason)
        if self.outcome in (None, "failed"):
            self.outcome = outcome

    def require(self, cond: bool, reason: str, outcome: str = "failed") -> bool:
        if not cond:
            self.fail(reason, outcome)
        return cond

    def note(self, reason: str) -> None:
        """A passing observation worth showing to the agent."""
        self.reasons.append(reason)

    def child_outcome(self, res: ChildResult) -> str:
        """Classify a child run: timeout, oom_killed (allocator error / SIGKILL), failed."""
        if res.timed_out:
            return "timeout"
        if res.signal == signal.SIGKILL or "can't allocate memory" in res.output:
            return "oom_killed"
        return "failed"

    def require_clean_exit(self, res: ChildResult, what: str) -> bool:
        if res.ok:
            return True
        if res.timed_out:
            why = f"{what} did not finish within {res.duration_s:.0f}s (killed)"
        else:
            why = f"{what} exited with code {res.returncode}"
        self.fail(f"{why}; last output:\n{res.tail()}", self.child_outcome(res))
        return False

    def verdict(self) -> dict[str, Any]:
        passed = self.outcome is None
        return {
            "passed": passed,
            "outcome": "passed" if passed else self.outcome,
            "reasons": self.reasons,
            "evidence": self.evidence,
        }

    # -- entry point ------------------------------------------------------------------
    @staticmethod
    def main(body: Callable[[Check], None]) -> None:
        """Parse args, read the nonce, run ``body`` and print the framed verdict."""
        parser = argparse.ArgumentParser()
        parser.add_argument("--workspace", required=True)
        args = parser.parse_args()
        nonce = sys.stdin.readline().strip()
        sys.stdin.close()
        out = os.fdopen(os.dup(sys.stdout.fileno()), "w")
        check_dir = Path(sys.argv[0]).resolve().parent
        # A fixed path when free (fresh verifier containers): recorded reasons stay identical.
        fixed = Path(tempfile.gettempdir()) / "check"
        try:
            fixed.mkdir(mode=0o700)
            scratch = str(fixed)
        except FileExistsError:
            scratch = tempfile.mkdtemp(prefix="check-")
        ck = Check(Path(args.workspace).resolve(), check_dir, Path(scratch))
        uid = os.environ.get("SANDBOX_CHILD_UID")
        if uid and os.geteuid() == 0:
            ck.child_uid = int(uid)
            ck.scratch = Path(scratch) / "home"
            ck.scratch.mkdir()
            os.chown(ck.scratch, ck.child_uid, ck.child_uid)
            ck.driver_dir = Path(scratch) / "bin"
            ck.driver_dir.mkdir()
            for src in check_dir.glob("*.py"):
                (ck.driver_dir / src.name).write_bytes(src.read_bytes())
                os.chmod(ck.driver_dir / src.name, 0o644)
            os.chmod(scratch, 0o755)
            os.chmod(ck.driver_dir, 0o755)
        try:
            body(ck)
            verdict = ck.verdict()
        except Exception:  # the check itself broke: never the agent's fault
            verdict = {
                "passed": False,
                "outcome": "infra_error",
                "reasons": ["the hidden check crashed:\n" + traceback.format_exc()],
                "evidence": ck.evidence,
            }
        out.write(f"{VERDICT_TAG} {nonce} {json.dumps(verdict, sort_keys=True)}\n")
        out.flush()
        # Children may leave files root cannot delete (no CAP_DAC_OVERRIDE in the verifier);
        # its container is removed anyway.
        shutil.rmtree(scratch, ignore_errors=True)


def run_child(argv: list[str], *, cwd: Path, env: dict[str, str], timeout_s: float,
              data_limit_mb: int | None = None, stdin: bytes | None = None,
              uid: int | None = None, output_cap: int = _OUTPUT_CAP) -> ChildResult:
    """Run ``argv`` in a new session; on timeout its whole process group is killed.

    Output (stdout + stderr) is drained while it runs and capped, head and tail kept; peak
    RSS comes from ``wait4``. ``uid`` runs the child as that user (the caller is root).
    """
    argv = with_data_limit(argv, data_limit_mb)
    drop: dict[str, Any] = {} if uid is None else {"user": uid, "group": uid, "extra_groups": []}
    start = time.monotonic()
    proc = subprocess.Popen(
        argv,
        cwd=str(cwd),
        env=env,
        stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
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
    deadline = start + timeout_s
    timed_out = False
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            timed_out = True
            _kill_group(proc.pid)
            _, status, usage = os.wait4(proc.pid, 0)
            break
        time.sleep(0.02)
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


def with_data_limit(argv: list[str], data_limit_mb: int | None) -> list[str]:
    """Prefix ``argv`` so it runs under RLIMIT_DATA = ``data_limit_mb`` (None: unchanged)."""
    if data_limit_mb is None:
        return argv
    cap = str(data_limit_mb * 1024 * 1024)
    return [sys.executable, "-S", "-c", _LIMIT_TRAMPOLINE, cap, *argv]


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def parse_verdict(stdout: str, nonce: str) -> dict[str, Any] | None:
    """Find the verdict line carrying ``nonce`` (the orchestrator's side of the protocol)."""
    prefix = f"{VERDICT_TAG} {nonce} "
    for line in reversed(stdout.splitlines()):
        if line.startswith(prefix):
            try:
                data = json.loads(line[len(prefix):])
            except json.JSONDecodeError:
                return None
            return data if isinstance(data, dict) else None
    return None


# ---------------------------------------------------------------------------- hidden sources
# Agent code runs during verification and may print or corrupt what it can reach. These keep
# the check's own sources out of the children's reach and out of the verdict, and turn a
# report that agent code overwrote into a failure instead of a crash.
# what reading a driver report that agent code may have written can raise
REPORT_ERRORS = (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError)


def hide_sources(ck: Check, keep: tuple[str, ...]) -> None:
    """Children only need ``keep`` from the readable copy of the check dir: drop the rest."""
    if ck.driver_dir is not None:
        for p in ck.driver_dir.glob("*.py"):
            if p.name not in keep:
                p.unlink()


def redact_sources(ck: Check) -> None:
    """Agent code can print what it reads (its driver): no verbatim line of the check's
    sources is shown in the verdict, except lines the workspace itself contains."""
    own: set[str] = set()
    for p in ck.workspace.rglob("*"):
        if p.is_file() and p.stat().st_size < 1_000_000:
            own.update(ln.strip() for ln in p.read_text(errors="replace").splitlines())
    lines = {s for p in ck.check_dir.glob("*.py")
             for s in (ln.strip() for ln in p.read_text(errors="replace").splitlines())
             if len(s) >= 4 and s not in own}
    long = [s for s in lines if len(s) >= 20]

    def scrub(value):
        if isinstance(value, str):
            if not any(s in value for s in long):
                return value
            # the text quotes the check (a traceback through a driver, or agent code printing
            # the driver): withhold every line of it that is a line of the check's sources
            out: list[str] = []
            for ln in value.split("\n"):
                if ln.strip() in lines or any(s in ln for s in long):
                    if not out or out[-1] != "[hidden check source]":
                        out.append("[hidden check source]")
                else:
                    out.append(ln)
            return "\n".join(out)
        if isinstance(value, list):
            return [scrub(v) for v in value]
        if isinstance(value, dict):
            return {k: scrub(v) for k, v in value.items()}
        return value

    ck.reasons[:] = scrub(ck.reasons)
    ck.evidence = scrub(ck.evidence)


def unreadable_report(ck: Check, exc: BaseException, tail: str) -> None:
    ck.fail(f"the training run left an unreadable report ({type(exc).__name__}: {str(exc)[:200]}): "
            "the driver's result files were overwritten or cut short by the code under test; "
            f"last output:\n{tail}")


def hidden(verify: Callable[[Check], None], keep: tuple[str, ...]) -> Callable[[Check], None]:
    """A check body for ``Check.main``: children see only the drivers in ``keep``, and the
    verdict never quotes the check's sources, whatever ``verify`` found or raised."""
    def body(ck: Check) -> None:
        hide_sources(ck, keep)
        try:
            verify(ck)
        finally:
            redact_sources(ck)
    return body
