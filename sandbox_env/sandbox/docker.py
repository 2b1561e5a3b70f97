"""Throwaway containers through the Docker SDK: one container per run, one per verification.

Each container has a read-only root, no network, a memory (= memory + swap) cap, a CPU
quota with OMP threads matched, a pids limit, all capabilities dropped, no-new-privileges,
tini as PID 1, a non-root user, and a sized tmpfs-backed volume as /workspace (a volume, so
the archive API can copy files in and out of a read-only container). Commands run under an
in-container `timeout -s KILL` (kills the whole process group), with an outer watchdog that
kills the container; the container is removed afterwards, which ends every process left.
A small warm pool keeps container creation off the episode's path. Every object carries the
labels `sandbox-env.owner` / `sandbox-env.role` so a reaper can remove leftovers.
"""

from __future__ import annotations

import io
import logging
import os
import queue
import tarfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..checkkit import __file__ as CHECKKIT_PATH
from ..models import Limits, Outcome, RunResult, Verdict
from ..tasks import TaskSpec
from ..workspace import MAX_FILE_BYTES, Workspace
from .base import SandboxUnavailable, cap_output, classify_run, new_nonce, verdict_from_check

log = logging.getLogger(__name__)

RUNNER_IMAGE = os.environ.get("SANDBOX_ENV_RUNNER_IMAGE", "sandbox-env-runner:torch2.13.0")
LABEL_OWNER = "sandbox-env.owner"
LABEL_ROLE = "sandbox-env.role"
SANDBOX_UID = 1000
WORKSPACE_DIR = "/workspace"
CHECKS_DIR = "/checks"
# The check (trusted) runs as root with just enough to manage its uid-1000 children; the
# children lose every capability when they switch uid.
VERIFIER_CAPS = ["SETUID", "SETGID", "CHOWN", "DAC_OVERRIDE", "FOWNER", "KILL"]
HARD_OUTPUT_CAP = 8_000_000  # bytes read from a run before the container is killed
CHECK_BUDGET_S = 600.0
# Generous caps for the pooled containers; each run narrows memory with container.update().
WORKSPACE_TMPFS = "size=512m"
TMP_TMPFS = "size=1g"


@dataclass
class _Box:
    """A started container and its workspace volume."""

    container: Any
    volumes: list[Any]
    role: str


def _tar(files: dict[str, bytes], uid: int, mode: int = 0o644) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        dirs: set[str] = set()
        for rel, data in sorted(files.items()):
            parts = rel.split("/")[:-1]
            for i in range(1, len(parts) + 1):
                d = "/".join(parts[:i])
                if d not in dirs:
                    dirs.add(d)
                    ti = tarfile.TarInfo(d)
                    ti.type, ti.mode, ti.uid, ti.gid = tarfile.DIRTYPE, 0o755 if uid else 0o700, uid, uid
                    tf.addfile(ti)
            ti = tarfile.TarInfo(rel)
            ti.size, ti.mode, ti.uid, ti.gid, ti.mtime = len(data), mode, uid, uid, int(time.time())
            tf.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


def _untar_text(raw: bytes) -> tuple[dict[str, str], set[str], list[str]]:
    """Text files of a tar stream (paths relative to the archived dir), skipped paths, notes."""
    files: dict[str, str] = {}
    skipped: set[str] = set()
    notes: list[str] = []
    with tarfile.open(fileobj=io.BytesIO(raw)) as tf:
        for m in tf.getmembers():
            name = m.name.split("/", 1)[1] if "/" in m.name else ""
            if not name or "__pycache__" in name.split("/") or m.isdir():
                continue
            if m.issym() or m.islnk():
                skipped.add(name)
                notes.append(f"skipped link {name}")
                continue
            if not m.isfile():
                continue
            if m.size > MAX_FILE_BYTES:
                skipped.add(name)
                notes.append(f"skipped {name} (larger than {MAX_FILE_BYTES} bytes)")
                continue
            f = tf.extractfile(m)
            data = f.read() if f else b""
            try:
                files[name] = data.decode()
            except UnicodeDecodeError:
                skipped.add(name)
                notes.append(f"skipped binary file {name}")
    return files, skipped, notes


class DockerSandbox:
    """Runs and verifies in throwaway containers (see the module docstring)."""

    mode = "docker"

    def __init__(self, image: str = RUNNER_IMAGE, owner: str | None = None, pool_size: int = 2,
                 client: Any = None) -> None:
        import docker  # optional dependency, only this module talks to Docker

        self._docker = docker
        try:
            self.client = client or docker.from_env(timeout=30)
            self.client.ping()
            self.image = self.client.images.get(image)
        except docker.errors.ImageNotFound as exc:
            raise SandboxUnavailable(f"sandbox image {image} not found: build it with "
                                     "`sandbox-env images build`") from exc
        except Exception as exc:
            raise SandboxUnavailable(f"Docker engine not reachable: {exc}") from exc
        self.image_name = image
        self.owner = owner or f"sbx-{uuid.uuid4().hex[:12]}"
        self.pool_size = pool_size
        self._pool: queue.Queue[_Box] = queue.Queue()
        self._closed = False
        self._fill_lock = threading.Lock()
        self._orphans: list[Any] = []  # containers / volumes whose removal failed
        leftovers = reap(self.client, self.owner)  # a previous run of this owner crashed
        if leftovers:
            log.warning("reaped %d leftover container(s) of %s", leftovers, self.owner)
        self._refill()

    # ------------------------------------------------------------------ lifecycle
    def provenance(self) -> dict[str, Any]:
        labels = self.image.labels or {}
        return {"image": self.image.id, "torch": labels.get("org.sandbox-env.torch")}

    def _labels(self, role: str) -> dict[str, str]:
        return {LABEL_OWNER: self.owner, LABEL_ROLE: role}

    def _create(self, role: str) -> _Box:
        """Create and start an idle container (`sleep infinity` under tini)."""
        verify = role == "verify"
        mounts = {WORKSPACE_DIR: f"{WORKSPACE_TMPFS},uid={SANDBOX_UID},gid={SANDBOX_UID}"}
        if verify:  # hidden checks: root-only, outside the workspace
            mounts[CHECKS_DIR] = "size=64m,uid=0,gid=0,mode=0700"
        vols = []
        try:
            for target, opts in mounts.items():
                vols.append((target, self.client.volumes.create(
                    driver="local", labels=self._labels(role),
                    driver_opts={"type": "tmpfs", "device": "tmpfs", "o": opts})))
        except Exception:
            for _, v in vols:
                v.remove(force=True)
            raise
        volumes = {v.name: {"bind": target, "mode": "rw"} for target, v in vols}
        try:
            ct = self.client.containers.create(
                self.image_name, command=["sleep", "infinity"], init=True,
                user="0" if verify else str(SANDBOX_UID), working_dir=WORKSPACE_DIR,
                read_only=True, network_mode="none", hostname="localhost",
                tmpfs={"/tmp": f"{TMP_TMPFS},uid={SANDBOX_UID},gid={SANDBOX_UID},exec"},
                volumes=volumes, mem_limit="4g", memswap_limit="4g", pids_limit=512,
                cap_drop=["ALL"], cap_add=VERIFIER_CAPS if verify else [],
                security_opt=["no-new-privileges"], shm_size="1g",
                labels=self._labels(role), environment={"HOME": "/tmp"},
            )
            ct.start()
        except Exception:
            for _, v in vols:
                v.remove(force=True)
            raise
        return _Box(ct, [v for _, v in vols], role)

    def _refill(self) -> None:
        """Top the warm pool up in the background."""
        def work() -> None:
            with self._fill_lock:
                while not self._closed and self._pool.qsize() < self.pool_size:
                    try:
                        self._pool.put(self._create("run"))
                    except Exception as exc:  # the next take() creates synchronously
                        log.warning("warm pool refill failed: %s", exc)
                        return
        threading.Thread(target=work, daemon=True).start()

    def _take(self) -> _Box:
        """A started container: a warm one if it is still running (an engine restart kills them)."""
        while True:
            try:
                box = self._pool.get_nowait()
            except queue.Empty:
                box = self._create("run")
                break
            try:
                box.container.reload()
                if box.container.status == "running":
                    break
            except self._docker.errors.DockerException:
                pass
            self._destroy(box)
        self._remove_orphans()
        self._refill()
        return box

    def _engine_down(self, exc: Exception) -> SandboxUnavailable | None:
        """SandboxUnavailable when ``exc`` came from an unreachable engine (not a bad container)."""
        try:
            self.client.ping()
            return None
        except Exception as ping_exc:
            return SandboxUnavailable(f"Docker engine not reachable ({ping_exc}); original error: {exc}")

    def _destroy(self, box: _Box) -> None:
        """Remove a box; what cannot be removed now (engine down) is retried on the next take."""
        for obj in (box.container, *box.volumes):
            try:
                obj.remove(force=True)
            except self._docker.errors.NotFound:
                pass
            except Exception as exc:
                log.warning("could not remove %s (will retry): %s", obj, exc)
                with self._fill_lock:
                    self._orphans.append(obj)

    def _remove_orphans(self) -> None:
        with self._fill_lock:
            orphans, self._orphans = self._orphans, []
        for obj in orphans:
            try:
                obj.remove(force=True)
            except self._docker.errors.NotFound:
                pass
            except Exception:
                with self._fill_lock:
                    self._orphans.append(obj)

    def close(self) -> None:
        self._closed = True
        while True:
            try:
                self._destroy(self._pool.get_nowait())
            except queue.Empty:
                break
        reap(self.client, self.owner)

    # ------------------------------------------------------------------ execution
    def _exec(self, box: _Box, argv: list[str], *, user: str, env: dict[str, str], timeout_s: float,
              output_limit: int, stdin: bytes | None = None) -> tuple[int | None, bytes, bool, float]:
        """Run argv in the container under `timeout -s KILL`; (exit, output, timed_out, secs)."""
        api = self.client.api
        wrapped = ["timeout", "-s", "KILL", str(int(timeout_s)), *argv]
        if stdin is not None:  # the nonce: written to a root-only file, fed by the shell
            wrapped = ["sh", "-c", 'exec "$@" < /checks/.nonce', "sh", *wrapped]
            box.container.put_archive(CHECKS_DIR, _tar({".nonce": stdin}, 0, 0o600))
        ex = api.exec_create(box.container.id, wrapped, user=user, environment=env,
                             workdir=WORKSPACE_DIR, stdout=True, stderr=True)
        start = time.monotonic()
        killed = threading.Event()

        def watchdog() -> None:
            if not done.wait(timeout_s + 10):
                killed.set()
                try:
                    box.container.kill()
                except Exception:
                    pass

        done = threading.Event()
        threading.Thread(target=watchdog, daemon=True).start()
        chunks: list[bytes] = []
        size = 0
        try:
            for chunk in api.exec_start(ex["Id"], stream=True, demux=False):
                size += len(chunk)
                if size <= max(output_limit * 4, HARD_OUTPUT_CAP // 8):
                    chunks.append(chunk)
                if size > HARD_OUTPUT_CAP:
                    box.container.kill()
                    chunks.append(b"\n[sandbox] output flood: container killed\n")
                    break
        finally:
            done.set()
        secs = time.monotonic() - start
        info = api.exec_inspect(ex["Id"])
        code = info.get("ExitCode")
        timed_out = killed.is_set() or (code == 137 and secs >= timeout_s - 0.5)
        return (None if timed_out else code), b"".join(chunks), timed_out, secs

    def _oom_kills(self, box: _Box) -> int:
        try:
            r = box.container.exec_run(["cat", "/sys/fs/cgroup/memory/memory.oom_control"], user="0")
            for line in r.output.decode().splitlines():
                if line.startswith("oom_kill "):
                    return int(line.split()[1])
        except Exception:
            pass
        return 0

    @staticmethod
    def _env(limits: Limits) -> dict[str, str]:
        threads = str(max(1, int(limits.cpus)))
        return {"OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads, "HOME": "/tmp",
                "TMPDIR": "/tmp", "PYTHONUNBUFFERED": "1", "GLOO_SOCKET_IFNAME": "lo"}

    def _limit(self, box: _Box, limits: Limits) -> None:
        mem = f"{limits.memory_mb}m"
        box.container.update(mem_limit=mem, memswap_limit=mem,
                             cpu_period=100_000, cpu_quota=int(limits.cpus * 100_000))

    def run(self, workspace: Workspace, command: str, limits: Limits, task: TaskSpec) -> RunResult:
        """Run ``command``; raises SandboxUnavailable when the engine is unreachable."""
        try:
            box = self._take()
        except Exception as exc:
            if down := self._engine_down(exc):
                raise down from exc
            return self._infra_run(command, f"could not start a sandbox container: {exc}")
        try:
            self._limit(box, limits)
            files = {p: t.encode() for p, t in workspace.files.items()}
            box.container.put_archive(WORKSPACE_DIR, _tar(files, SANDBOX_UID))
            argv = ["bash", "-c", command]
            if limits.data_mb:
                argv = ["prlimit", f"--data={limits.data_mb * 1024 * 1024}", "--", *argv]
            code, out, timed_out, secs = self._exec(
                box, argv, user=str(SANDBOX_UID), env=self._env(limits),
                timeout_s=limits.timeout_s, output_limit=limits.output_bytes)
            oom = code == 137 and not timed_out and self._oom_kills(box) > 0
            text = cap_output(out, limits.output_bytes)
            if oom:
                text += "\n[sandbox] killed by the container's memory limit (OOM)"
            changed: dict[str, str] = {}
            notes: list[str] = []
            try:
                bits, _ = box.container.get_archive(WORKSPACE_DIR + "/.")
                after, skipped, notes = _untar_text(b"".join(bits))
                changed = workspace.sync(after, skipped)
            except self._docker.errors.APIError as exc:
                notes.append(f"could not copy files back ({exc.explanation or exc})")
            if notes:
                text += "\n" + "\n".join(f"[sandbox] {n}" for n in notes)
            return RunResult(command=command, output=text, exit_code=code,
                             outcome=classify_run(code, timed_out, oom, text),
                             duration_s=round(secs, 3), changed_files=changed, source="docker")
        except self._docker.errors.DockerException as exc:
            if down := self._engine_down(exc):
                raise down from exc
            return self._infra_run(command, f"docker error: {exc}")
        finally:
            self._destroy(box)

    @staticmethod
    def _infra_run(command: str, why: str) -> RunResult:
        return RunResult(command=command, output=why, exit_code=None, outcome=Outcome.infra_error,
                         duration_s=0.0, source="docker")

    def verify(self, workspace: Workspace, task: TaskSpec) -> Verdict:
        """Run the hidden checks; raises SandboxUnavailable when the engine is unreachable."""
        try:
            box = self._create("verify")
        except Exception as exc:
            if down := self._engine_down(exc):
                raise down from exc
            return Verdict(passed=False, outcome=Outcome.infra_error, source="docker",
                           reasons=[f"could not start a verification container: {exc}"])
        try:
            self._limit(box, Limits(memory_mb=max(4096, task.limits.memory_mb), cpus=2))
            files = {p: t.encode() for p, t in workspace.files.items()}
            box.container.put_archive(WORKSPACE_DIR, _tar(files, SANDBOX_UID))
            checks = {p.relative_to(task.checks_dir).as_posix(): p.read_bytes()
                      for p in task.checks_dir.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
            checks["checkkit.py"] = Path(CHECKKIT_PATH).read_bytes()
            box.container.put_archive(CHECKS_DIR, _tar(checks, 0, 0o600))
            nonce = new_nonce()
            env = {**self._env(Limits(cpus=2)), "SANDBOX_CHILD_UID": str(SANDBOX_UID)}
            code, out, timed_out, secs = self._exec(
                box, ["python", f"{CHECKS_DIR}/check.py", "--workspace", WORKSPACE_DIR],
                user="0", env=env, timeout_s=CHECK_BUDGET_S, output_limit=4_000_000,
                stdin=(nonce + "\n").encode())
            return verdict_from_check(out.decode(errors="replace"), nonce, exit_code=code,
                                      duration_s=round(secs, 3), source="docker", timed_out=timed_out)
        except self._docker.errors.DockerException as exc:
            if down := self._engine_down(exc):
                raise down from exc
            return Verdict(passed=False, outcome=Outcome.infra_error, source="docker",
                           reasons=[f"docker error during verification: {exc}"])
        finally:
            self._destroy(box)


def reap(client: Any, owner: str | None = None) -> int:
    """Remove sandbox-env containers and volumes (of one owner, or all); returns how many."""
    label = f"{LABEL_OWNER}={owner}" if owner else LABEL_OWNER
    n = 0
    for ct in client.containers.list(all=True, filters={"label": label}):
        try:
            ct.remove(force=True)
            n += 1
        except Exception as exc:
            log.warning("reap: %s: %s", ct.short_id, exc)
    for vol in client.volumes.list(filters={"label": label}):
        try:
            vol.remove(force=True)
        except Exception as exc:
            log.warning("reap: volume %s: %s", vol.name, exc)
    return n
