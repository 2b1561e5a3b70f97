"""What a hidden check runs with inside the verifier: the ``Check`` it works with (run agent
code in children, record findings, emit the verdict) and the guards that keep the check's own
sources away from agent code and out of the verdict.

Standard library only. At verification time the files of ``kit_files()`` are copied next to a
task's ``checks/check.py`` (outside the agent's workspace), which imports this module as
``check_runtime``. The check never imports agent code in its own process: agent code runs in
children (``Check.run``) with stdin closed and output captured, so it can neither write to the
check's stdout nor read the nonce of the verdict line (``verdict_protocol``).
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import signal
import sys
import tempfile
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:  # imported as sandbox_env.check_runtime (host, tests)
    from .child_process import ChildResult, child_env, run_child
    from .verdict_protocol import frame_verdict, read_nonce
except ImportError:  # beside check.py in the verifier, where the kit's modules are top-level
    from child_process import ChildResult, child_env, run_child  # type: ignore[no-redef]
    from verdict_protocol import frame_verdict, read_nonce  # type: ignore[no-redef]

# what a check imports: the runtime, and the kit's verifiers (check_kit) with the driver they run
KIT_MODULES = ("check_runtime", "child_process", "verdict_protocol", "check_kit", "kit_driver",
               "tamper_guard")
CHECK_ONLY_ENV = "SANDBOX_"  # variables the host sets for the check: never passed to agent code
OUTCOMES = ("passed", "failed", "timeout", "oom_killed", "infra_error")
# what reading a driver report that agent code may have written can raise
REPORT_ERRORS = (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError)
__all__ = ["KIT_MODULES", "OUTCOMES", "REPORT_ERRORS", "Check", "ChildResult", "hidden",
           "kit_files", "unreadable_report"]


def kit_files() -> dict[str, bytes]:
    """The kit by file name: every backend that runs checks writes these beside check.py."""
    here = Path(__file__).parent
    return {f"{m}.py": (here / f"{m}.py").read_bytes() for m in KIT_MODULES}


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
    private_dir: Path | None = None  # the check's own files, out of children's reach (see _split)
    bank: dict[str, Any] | None = None  # a live reference run's results, for the host's bank

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
        no stdin, a minimal environment plus ``env``, and optionally RLIMIT_DATA. When the
        host says so (``SANDBOX_CHILD_ENV=inherit``) the environment is the check's own minus
        the host's ``SANDBOX_*`` variables: the environment of the agent's own runs.
        """
        if argv and argv[0] in ("python", "python3"):
            argv = [sys.executable, *argv[1:]]
        inherit = os.environ.get("SANDBOX_CHILD_ENV") == "inherit"
        if inherit:  # exactly the environment of the agent's own runs (the host gave it to us)
            child = {k: v for k, v in os.environ.items() if not k.startswith(CHECK_ONLY_ENV)}
            child.update(env or {})
        else:
            child = child_env(self.scratch, extra={"PYTHONHASHSEED": "0", **(env or {})})
        uid = None
        if self.child_uid is not None:
            uid = self.child_uid
            self._hand_scratch_to_child()
        return run_child(argv, cwd=cwd or self.workspace, env=child, timeout_s=timeout_s,
                         data_limit_mb=data_limit_mb, uid=uid, separate_stderr=inherit)

    def run_as_agent(self, command: str, *, cwd: Path, timeout_s: float, limit_s: float,
                     data_limit_mb: int | None = None, env: dict[str, str] | None = None,
                     deployed: bool = False) -> ChildResult:
        """Run the repo's own ``command`` the way the agent's own runs start it.

        Where ``python`` on PATH is this interpreter (docker mode) that is the agent's chain,
        ``timeout -s KILL LIMIT prlimit --data=CAP -- bash -c COMMAND``; elsewhere (a wrapper
        interpreter isolates children, as in process mode) the command's argv runs directly.
        ``deployed``: started as a deployment starts it instead, without the agent's ``timeout``
        in the chain (this check's own watchdog ends it at LIMIT); ``env`` is added on top.
        """
        path = os.environ.get("PATH")
        if shutil.which("python", path=path) == sys.executable and shutil.which("bash", path=path):
            argv = ["bash", "-c", command]
            if data_limit_mb and shutil.which("prlimit", path=path):
                argv = ["prlimit", f"--data={data_limit_mb * 1024 * 1024}", "--", *argv]
                data_limit_mb = None
            if shutil.which("timeout", path=path) and not deployed:
                argv = ["timeout", "-s", "KILL", str(int(limit_s)), *argv]
        else:
            argv = shlex.split(command)
        res = self.run(argv, cwd=cwd, timeout_s=limit_s if deployed else max(timeout_s, limit_s + 5),
                       data_limit_mb=data_limit_mb, env=env)
        # `timeout -s KILL` kills its own process group, itself included: a shell would show 137,
        # Python shows -9. Either way, at the limit it is the run's time limit firing.
        if (argv[0] == "timeout" and res.returncode in (137, -signal.SIGKILL)
                and res.duration_s >= limit_s - 0.5):
            res.returncode, res.signal, res.timed_out = None, None, True
        return res

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
            **({"bank": self.bank} if self.bank is not None else {}),
        }

    def _copy_drivers(self, dest: Path) -> None:
        """Readable copies of the check's ``*.py`` for children (``hidden`` keeps only the drivers)."""
        _copy_drivers_into(self.check_dir, dest)
        self.driver_dir = dest

    # -- entry point ------------------------------------------------------------------
    @staticmethod
    def main(body: Callable[[Check], None]) -> None:
        """Parse args, read the nonce, run ``body`` and print the framed verdict."""
        parser = argparse.ArgumentParser()
        parser.add_argument("--workspace", required=True)
        args = parser.parse_args()
        nonce = read_nonce(sys.stdin)
        sys.stdin.close()
        out = os.fdopen(os.dup(sys.stdout.fileno()), "w")
        check_dir = Path(sys.argv[0]).resolve().parent
        scratch = _scratch_dir(os.environ.get("SANDBOX_CHECK_SCRATCH"))
        ck = Check(Path(args.workspace).resolve(), check_dir, scratch)
        uid = os.environ.get("SANDBOX_CHILD_UID")
        if uid and os.geteuid() == 0:
            ck._split(int(uid))
        elif os.environ.get("SANDBOX_CHECK_SCRATCH"):  # process mode: children see home and bin only
            ck._split(None)
        else:  # local mode: children still get their drivers from a copy
            ck._copy_drivers(scratch / "bin")
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
        out.write(frame_verdict(nonce, verdict))
        out.flush()
        # Children may leave files root cannot delete (no CAP_DAC_OVERRIDE in the verifier);
        # its container is removed anyway.
        shutil.rmtree(scratch, ignore_errors=True)

    def _split(self, uid: int | None) -> None:
        """Children get a home of their own (``home``) and read-only copies of the check's
        ``*.py`` (``bin``) under the scratch dir; ``private`` (the pristine workspace) stays the
        check's. Docker mode: the check runs as root and children as ``uid``, so ownership does
        it (the check dir is root-only). Process mode (``uid`` None: one uid): the nested
        sandbox binds in ``home`` writable and ``bin`` read-only, and never ``private``."""
        root = self.scratch
        self.scratch = root / "home"
        self.scratch.mkdir()
        self.private_dir = root / "private"
        self._copy_drivers(root / "bin")
        if uid is None:
            return
        self.child_uid = uid
        os.chown(self.scratch, uid, uid)
        os.chmod(root, 0o755)
        os.chmod(self.driver_dir, 0o755)
        if root.parent == self.check_dir:  # children pass through the root-only check dir
            os.chmod(self.check_dir, 0o711)


def _copy_drivers_into(check_dir: Path, dest: Path) -> None:
    dest.mkdir()
    for src in check_dir.glob("*.py"):
        (dest / src.name).write_bytes(src.read_bytes())
        os.chmod(dest / src.name, 0o644)


def _scratch_dir(where: str | None = None) -> Path:
    """A fixed path when free (fresh verifier containers), so recorded reasons stay identical.

    ``where`` (the host's ``SANDBOX_CHECK_SCRATCH``): a place outside what agent code sees in
    its own runs (docker mode: under /checks, so /tmp looks as it does in an agent run).
    """
    fixed = Path(where) if where else Path(tempfile.gettempdir()) / "check"
    try:
        fixed.mkdir(mode=0o700)
        return fixed
    except FileExistsError:
        return Path(tempfile.mkdtemp(prefix="check-"))


# ---------------------------------------------------------------------------- hidden sources
# Agent code runs during verification and may print or corrupt what it can reach. These keep
# the check's own sources out of the children's reach and out of the verdict, and turn a
# report that agent code overwrote into a failure instead of a crash.
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

    def scrub(value: Any) -> Any:
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
