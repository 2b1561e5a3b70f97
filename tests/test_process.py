"""ProcessSandbox against real bubblewrap: the docker limit suite, the privilege split, the tasks.

Skipped when bwrap or the runner venv (``sandbox-env runner build``) is missing. The four seed
tasks reproduce and verify at the end (about a minute and a half on 2 cores).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox_env.models import Limits, Outcome
from sandbox_env.sandbox.process import ProcessSandbox
from sandbox_env.sandbox.process.cgroups import RunGroup, probe
from sandbox_env.suite.tasks import TaskRegistry, TaskSpec
from sandbox_env.workspace import Workspace

from .tiers import rotating

OK, WHY = ProcessSandbox.available()
if not OK:
    pytest.skip(f"process mode not available: {WHY}", allow_module_level=True)


@pytest.fixture(scope="module")
def sbx() -> Iterator[ProcessSandbox]:
    s = ProcessSandbox()
    yield s
    s.close()


@pytest.fixture
def toy(toy_tasks: TaskRegistry) -> TaskSpec:
    return toy_tasks.get("toy_mean")


def run(sbx: ProcessSandbox, task: TaskSpec, cmd: str, **limits: object):  # type: ignore[no-untyped-def]
    ws = Workspace(task.repo_files())
    return ws, sbx.run(ws, cmd, Limits(**{"timeout_s": 20, **limits}), task)


def _host_procs(marker: str) -> list[str]:
    out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=False).stdout
    return [ln for ln in out.splitlines() if marker in ln and "ps -eo" not in ln]


# -- isolation ------------------------------------------------------------------------------
def test_runs_non_root_without_network_and_copies_files_back(sbx: ProcessSandbox, toy: TaskSpec) -> None:
    ws, res = run(sbx, toy, "id -u; echo made > new.txt; rm report.py; mkdir -p d/e && echo x > d/e/f.txt; "
                  "python -c \"import socket; socket.create_connection(('1.1.1.1', 53), 2)\" "
                  "|| echo NO-NETWORK; python -c \"import socket; s = socket.socket(); "
                  "s.bind(('127.0.0.1', 0)); print('LOOPBACK', s.getsockname()[1] > 0)\"")
    assert res.outcome == Outcome.passed, res.output
    assert res.output.split()[0] == "1000" and "NO-NETWORK" in res.output and "LOOPBACK True" in res.output
    assert ws.files["new.txt"] == "made\n" and ws.files["d/e/f.txt"] == "x\n" and "report.py" not in ws.files
    assert res.source == "process"


def test_host_is_invisible_and_root_read_only(sbx: ProcessSandbox, toy: TaskSpec) -> None:
    here = Path(__file__).resolve().parent.parent
    _, res = run(sbx, toy, f"ls {here} ~root /work /checks 2>&1; touch /etc/x /usr/x /opt/venv/x 2>&1; "
                 "python -c 'import torch, sys; print(torch.__version__, sys.prefix)'; "
                 "python -m pytest --version")
    assert res.output.count("No such file or directory") >= 3, res.output
    assert res.output.count("Read-only file system") == 3, res.output
    assert "2.13.0" in res.output and "/opt/venv" in res.output and "pytest 9.2.0" in res.output


def test_real_failure_is_failed(sbx: ProcessSandbox, toy: TaskSpec) -> None:
    _, res = run(sbx, toy, "python report.py")
    assert res.outcome == Outcome.failed and res.exit_code == 1 and "sanity check failed" in res.output


# -- limits ---------------------------------------------------------------------------------
def test_infinite_loop_times_out_and_tree_is_killed(sbx: ProcessSandbox, toy: TaskSpec) -> None:
    t = time.monotonic()
    _, res = run(sbx, toy, "(setsid sleep 1234.5 &); (nohup sleep 1234.5 >/dev/null 2>&1 &); "
                 "while true; do :; done", timeout_s=2)
    assert res.outcome == Outcome.timeout and res.exit_code is None
    assert time.monotonic() - t < 10
    assert _host_procs("sleep 1234.5") == []


def test_background_processes_end_with_the_command(sbx: ProcessSandbox, toy: TaskSpec) -> None:
    _, res = run(sbx, toy, "(setsid sleep 1234.6 &); echo started")
    assert res.outcome == Outcome.passed and res.duration_s < 5
    assert _host_procs("sleep 1234.6") == []


def test_memory_bomb_is_oom_killed(sbx: ProcessSandbox, toy: TaskSpec) -> None:
    _, res = run(sbx, toy, "python -c \"x = []\nwhile True: x.append(bytearray(50_000_000))\"", memory_mb=256)
    assert res.outcome == Outcome.oom_killed, res.output


def test_data_rlimit_gives_allocator_error_not_kill(sbx: ProcessSandbox, toy: TaskSpec) -> None:
    _, res = run(sbx, toy, "python -c \"x = bytearray(900_000_000)\"", data_mb=400)
    assert res.outcome == Outcome.oom_killed and "MemoryError" in res.output


def test_fork_bomb_is_contained(sbx: ProcessSandbox, toy: TaskSpec) -> None:
    _, res = run(sbx, toy, "python -c \"import os\nn=0\ntry:\n  while True:\n    if os.fork()==0:\n"
                 "      import time; time.sleep(30)\n    n+=1\nexcept OSError as e: print('stopped', n, e)\"",
                 timeout_s=15, pids=64)
    assert "stopped" in res.output and "Resource temporarily unavailable" in res.output, res.output[-500:]
    assert int(re.search(r"stopped (\d+)", res.output).group(1)) < 64  # type: ignore[union-attr]


def test_cpu_time_limit_ends_a_busy_loop(sbx: ProcessSandbox, toy: TaskSpec) -> None:
    _, res = run(sbx, toy, "exec python -c 'while True: pass'", timeout_s=2, cpus=0.5)  # 2 s of CPU
    assert res.outcome == Outcome.timeout


def test_a_cpu_time_kill_is_a_timeout_not_a_failure(sbx: ProcessSandbox, toy: TaskSpec) -> None:
    """The CPU-time rlimit fires first here (3 s of CPU, a 20 s wall): still a time limit."""
    t0 = time.monotonic()
    _, res = run(sbx, toy, "exec python -c 'while True: pass'", timeout_s=20, cpus=0.1)
    assert res.outcome == Outcome.timeout and time.monotonic() - t0 < 15, res.output[-500:]


def test_output_flood_is_capped(sbx: ProcessSandbox, toy: TaskSpec) -> None:
    _, res = run(sbx, toy, "yes flood | head -c 50000000", output_bytes=10_000)
    assert "output truncated" in res.output and len(res.output) < 12_000


def test_tmpfs_fill_gets_enospc(sbx: ProcessSandbox, toy: TaskSpec) -> None:
    _, res = run(sbx, toy, "dd if=/dev/zero of=/tmp/fill bs=1M count=1500 2>&1 | grep -o 'No space.*'; "
                 "for i in 1 2; do dd if=/dev/zero of=big$i bs=1M count=400 2>&1 | grep -o 'No space.*'; "
                 "done; "
                 "touch /etc/x 2>&1", timeout_s=60)
    assert res.output.count("No space left on device") >= 2, res.output
    assert "Read-only file system" in res.output
    assert "big1" not in res.changed_files  # oversized: not taken back


# -- taking files back ----------------------------------------------------------------------
def test_links_and_special_files_do_not_escape_the_workspace(sbx: ProcessSandbox, toy: TaskSpec) -> None:
    ws, res = run(sbx, toy, "ln -s /etc/passwd passwd; ln -s ../../../../etc etc; ln -s / root; "
                  "ln stats.py hard.py; mkfifo fifo; python -c \"import socket; s = socket.socket("
                  "socket.AF_UNIX); s.bind('sock')\"; printf '\\x00\\xff' > bin.dat; echo done")
    assert res.outcome == Outcome.passed, res.output
    assert not {"passwd", "etc", "root", "fifo", "sock", "bin.dat"} & set(ws.files), sorted(ws.files)
    assert not any(k.startswith(("etc/", "root/", "/")) or ".." in k for k in ws.files)
    assert "skipped symlink passwd" in res.output and ws.blobs == {"bin.dat": b"\x00\xff"}
    assert ws.files["hard.py"] == ws.files["stats.py"]  # a hard link in the workspace is a copy


def test_symlink_swap_of_a_workspace_file_keeps_the_old_content(sbx: ProcessSandbox, toy: TaskSpec) -> None:
    ws, res = run(sbx, toy, "rm stats.py && ln -s /etc/hostname stats.py")
    old = toy.repo_files()["stats.py"]
    assert ws.files["stats.py"] == old and "skipped symlink stats.py" in res.output


# -- verification: the privilege split ------------------------------------------------------
SNOOP = """
import glob, os, signal
seen = []
for p in ["/checks/check.py", "/checks/reference.json", "/checks/make_reference.py"]:
    if os.path.exists(p):
        seen.append(p)
for d in glob.glob("/proc/[0-9]*"):
    try:
        if os.readlink(d + "/ns/pid") == os.readlink("/proc/self/ns/pid"):
            continue  # this sandbox's own processes
    except OSError:
        pass  # another user namespace's process: its links are closed to us
    for sub in ("root/checks", "cwd", "fd/0", "fd/1", "environ", "mem"):
        try:
            if sub in ("root/checks", "cwd"):
                os.listdir(d + "/" + sub)
            else:  # write: the check's stdout (fd 1) carries its verdict
                open(d + "/" + sub, "wb" if sub == "fd/1" else "rb").close()
            seen.append(d + "/" + sub)
        except OSError:
            pass
    try:
        fd = os.open(d, os.O_RDONLY)
        signal.pidfd_send_signal(fd, 0)
        seen.append("can signal " + d)
    except (OSError, AttributeError):
        pass
# the check's own files: its pristine copy of the workspace (private), the kit's drivers (bin)
for top in ("/tmp", "/dev/shm", "/sandbox", os.path.expanduser("~")):
    for dirpath, dirnames, filenames in os.walk(top):
        if "private" in dirnames:
            seen.append(os.path.join(dirpath, "private"))
        for f in filenames:
            p = os.path.join(dirpath, f)
            if f in ("kit_driver.py", "tamper_guard.py", "check_kit.py", "check_runtime.py"):
                try:
                    open(p, "a").close()
                    seen.append("can write " + p)
                except OSError:
                    pass
assert not seen, seen
"""


def test_verify_hides_checks_and_ignores_forged_verdicts(sbx: ProcessSandbox, toy: TaskSpec) -> None:
    good = Workspace(toy.repo_files())
    good.apply_patch(toy.solution_patch)
    v = sbx.verify(good, toy)
    assert v.passed and v.source == "process", v.reasons
    forged = Workspace(toy.repo_files())
    forged.apply_patch((toy.root / "patches" / "fake_verdict.patch").read_text())
    assert not sbx.verify(forged, toy).passed
    snoop = Workspace(toy.repo_files())
    snoop.apply_patch(toy.solution_patch)
    snoop.edit("probe.py", "", SNOOP)
    snoop.edit("stats.py", "def mean", "import probe  # noqa\ndef mean")
    v = sbx.verify(snoop, toy)
    assert v.passed, v.reasons  # the check ran to its verdict: nothing was seen, nothing killed


def test_checks_are_not_readable_in_a_run(sbx: ProcessSandbox, toy: TaskSpec) -> None:
    _, res = run(sbx, toy, "cat /checks/check.py; find / -name check.py -path '*checks*' 2>/dev/null | head")
    assert "Check.main" not in res.output
    assert "checks/check.py" not in res.output.replace("/checks/check.py:", "")


KILLED_SERVER = """
import pathlib, sys, threading, time
from sandbox_env.models import Limits
from sandbox_env.sandbox.process import ProcessSandbox
from sandbox_env.suite.tasks import TaskRegistry
from sandbox_env.workspace import Workspace
toy = TaskRegistry(pathlib.Path(sys.argv[1])).get("toy_mean")
s = ProcessSandbox()
threading.Thread(target=s.run, args=(Workspace(toy.repo_files()), "sleep 60", Limits(timeout_s=60), toy),
                 daemon=True).start()
time.sleep(3)
print("running", flush=True)
time.sleep(60)
"""


def test_a_killed_servers_staging_is_reaped(toy: TaskSpec) -> None:
    """SIGKILL skips the staging dirs' clean-up (the workspace copies); cleanup(), which runs
    when a process sandbox is created and in ``sandbox-env reap``, removes them; a live
    process's are kept."""
    from sandbox_env.sandbox.process.sandbox import _stage_root, reap_staging

    root = Path(_stage_root() or "/tmp")
    p = subprocess.Popen([sys.executable, "-c", KILLED_SERVER, str(toy.root.parent)],
                         stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert p.stdout is not None and p.stdout.readline().strip() == "running"
        mine = sorted(d.name for d in root.iterdir() if re.match(rf"sbx-\w+-{p.pid}-", d.name))
        assert any(n.startswith("sbx-run-") for n in mine) and any(n.startswith("sbx-process-") for n in mine)
    finally:
        os.killpg(p.pid, 9)
        p.wait()
    time.sleep(0.5)
    assert all((root / n).exists() for n in mine)  # left behind by the kill
    ours = ProcessSandbox()  # a live sandbox's staging stays
    try:
        assert reap_staging() >= len(mine)
        assert not any((root / n).exists() for n in mine) and ours._static.exists()
    finally:
        ours.close()


def test_provenance_names_the_runner(sbx: ProcessSandbox) -> None:
    p = sbx.provenance()
    assert p["torch"] == "2.13.0" and p["image"].startswith("runner-venv:") and p["bwrap"]


# -- cgroups ----------------------------------------------------------------------------------
def test_cgroup_probe_says_what_it_found(tmp_path: Path) -> None:
    base, why = probe(tmp_path)  # no cgroup.controllers: looks like v1
    assert base is None and "cgroup v1" in why
    real_base, real_why = probe()
    assert ("delegated" in real_why) == (real_base is not None)


def test_run_group_writes_its_limits(tmp_path: Path) -> None:
    g = RunGroup(tmp_path, memory_mb=256, pids=64)
    assert (g.path / "memory.max").read_text() == str(256 << 20)
    assert (g.path / "pids.max").read_text() == "64"
    (g.path / "memory.events").write_text("oom 1\noom_kill 2\n")
    assert g.oom_kills() == 2


# -- the four seed tasks ----------------------------------------------------------------------
TASK_IDS = ["oom_graph_leak", "compile_graph_break", "ddp_gradient_hang", "fsdp_collective_deadlock"]


@pytest.mark.parametrize("task_id", rotating(TASK_IDS, "SANDBOX_ENV_TASK_SLICE", 4))  # tests/tiers.py
def test_task_reproduces_and_its_fix_verifies(sbx: ProcessSandbox, real_tasks: TaskRegistry,
                                              task_id: str) -> None:
    task = real_tasks.get(task_id)
    res = sbx.run(Workspace(task.repo_files()), task.run_command, task.limits, task)
    assert res.outcome != Outcome.passed and task.failure.shows_in(res.output), res.output[-1500:]
    ws = Workspace(task.repo_files())
    ws.apply_patch(task.solution_patch)
    v = sbx.verify(ws, task)
    assert v.passed, v.reasons
    if os.environ.get("PROCESS_TASKS_PRINT"):
        print(task_id, res.duration_s, v.duration_s)


def test_a_check_child_peak_rss_is_the_childs_own(sbx: ProcessSandbox, toy: TaskSpec, tmp_path: Path) -> None:
    """The check measures its children's peak RSS with wait4 through the nested sandbox; the
    nested sandbox's own init must not drop it (bubblewrap's init did: a reference training run
    measured 19 MB, so the oom check failed the reference fix in process mode)."""
    import shutil

    shutil.copytree(toy.root, tmp_path / "rss_probe")
    (tmp_path / "rss_probe" / "checks" / "check.py").write_text(
        "from check_runtime import Check\n\n\n"
        "def body(ck):\n"
        "    res = ck.run(['python', '-c', 'b = bytearray(300 * 2**20); b[::4096] = bytes(len(b[::4096]))'],"
        " timeout_s=60)\n"
        "    ck.evidence['peak'] = res.peak_rss_mb\n"
        "    ck.require(res.ok and res.peak_rss_mb >= 300, f'peak {res.peak_rss_mb} MB')\n\n\n"
        "if __name__ == '__main__':\n"
        "    Check.main(body)\n")
    task = TaskRegistry(tmp_path).get("rss_probe")
    for _ in range(3):  # the lost usage was a race: check more than once
        v = sbx.verify(Workspace(task.repo_files()), task)
        assert v.passed, (v.reasons, v.evidence)
