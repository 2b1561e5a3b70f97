"""PID 1 of a process-mode sandbox: copy the workspace in, run one command, end every process,
copy the workspace out.

Standard library only; it runs inside the sandbox as ``python -I -S init.py SPEC`` (bwrap
``--as-pid-1``). As the namespace's init it cannot be killed from inside (the kernel drops
signals without a handler), and it makes itself non-dumpable, so agent code (same uid, no
capabilities) cannot ptrace it or open its /proc files. Steps:

1. copy ``copy_in`` (a read-only bind of the host's staging dir) into the sized tmpfs ``workspace``;
2. fork the command in its own session with the spec's rlimits, environment and cwd, and reap
   every process that gets reparented to it; at ``timeout_s`` (or when the command exits) send
   SIGKILL to every other process of the namespace and reap them all;
3. only then, with nothing else alive, copy the workspace's tree (directories, regular files,
   symlinks as links, files over ``max_file_bytes`` as sparse files of the same size) into
   the directory inherited as fd 3, which is not mounted in the sandbox, and write
   ``status.json`` (exit code, signal, timed out) there.

The host takes the files back from that directory with ``Workspace.absorb``.
"""

import ctypes
import json
import os
import resource
import shutil
import signal
import sys
import time

OUT_FD = 3
PR_SET_DUMPABLE = 4
RLIMITS = {"DATA": resource.RLIMIT_DATA, "NPROC": resource.RLIMIT_NPROC, "FSIZE": resource.RLIMIT_FSIZE,
           "CPU": resource.RLIMIT_CPU, "NOFILE": resource.RLIMIT_NOFILE}


class TooMany(Exception):
    pass


def _undumpable():
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    except OSError:
        pass


def _copy_in(src, dest):
    for entry in os.listdir(src):
        s, d = os.path.join(src, entry), os.path.join(dest, entry)
        if os.path.isdir(s):
            shutil.copytree(s, d, symlinks=True)
        else:
            shutil.copyfile(s, d)


def _start(spec):
    pid = os.fork()
    if pid:
        return pid
    try:
        os.setsid()
        for name, value in spec["rlimits"].items():
            if value is not None:
                # CPU: the hard limit a second past the soft one, so the kernel sends SIGXCPU (a
                # time limit) rather than SIGKILL, which it sends when both are reached at once
                hard = value + 1 if name == "CPU" else value
                resource.setrlimit(RLIMITS[name], (value, hard))
        os.chdir(spec["cwd"])
        os.execve(spec["argv"][0], spec["argv"], spec["env"])
    except BaseException as exc:
        os.write(2, f"[sandbox] could not start the command: {exc}\n".encode())
    os._exit(127)


def _supervise(main, timeout_s):
    """(wait status of ``main`` or None, timed out); every other process is dead on return."""
    deadline = time.monotonic() + timeout_s
    status, timed_out = None, False
    while status is None:
        pid, st = os.waitpid(-1, os.WNOHANG)
        if pid == main:
            status = st
        elif pid == 0:
            if time.monotonic() > deadline:
                timed_out = True
                break
            time.sleep(0.02)
    try:
        os.kill(-1, signal.SIGKILL)  # everything in the namespace but this process
    except ProcessLookupError:
        pass  # nothing else is left
    while True:
        try:
            pid, st = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        if pid == main:
            status = st
    return status, timed_out


def _copy_out(src, out_fd, spec, count):
    with os.scandir(src) as entries:
        for e in entries:
            count[0] += 1
            if count[0] > spec["max_entries"]:
                raise TooMany
            if e.name == "__pycache__":
                continue
            if e.is_symlink():
                os.symlink(os.readlink(e.path), e.name, dir_fd=out_fd)
            elif e.is_dir(follow_symlinks=False):
                os.mkdir(e.name, 0o700, dir_fd=out_fd)
                sub = os.open(e.name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=out_fd)
                try:
                    _copy_out(e.path, sub, spec, count)
                finally:
                    os.close(sub)
            elif e.is_file(follow_symlinks=False):
                size = e.stat(follow_symlinks=False).st_size
                fd = os.open(e.name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600, dir_fd=out_fd)
                with os.fdopen(fd, "wb") as out:
                    if size > spec["max_file_bytes"]:
                        out.truncate(size)  # the host sees its size and skips it, as docker mode does
                    else:
                        with open(e.path, "rb") as f:
                            shutil.copyfileobj(f, out)
            # FIFOs, sockets, devices: not taken back (as the docker archive drops them)


def main():
    _undumpable()
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    copy_out = spec.get("copy_out", False)
    if copy_out:
        os.set_inheritable(OUT_FD, False)
    if spec.get("copy_in"):
        _copy_in(spec["copy_in"], spec["workspace"])
    status, timed_out = _supervise(_start(spec), spec["timeout_s"])
    code = None if status is None else os.waitstatus_to_exitcode(status)
    result = {"exit_code": code, "signal": -code if code is not None and code < 0 else None,
              "timed_out": timed_out or code == -signal.SIGXCPU, "too_many_files": False}
    if copy_out:
        try:
            os.mkdir("workspace", 0o700, dir_fd=OUT_FD)
            ws = os.open("workspace", os.O_RDONLY | os.O_DIRECTORY, dir_fd=OUT_FD)
            try:
                _copy_out(spec["workspace"], ws, spec, [0])
            finally:
                os.close(ws)
        except TooMany:
            result["too_many_files"] = True
        fd = os.open("status.json", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600, dir_fd=OUT_FD)
        os.write(fd, json.dumps(result).encode())
        os.close(fd)
    if code is None:
        return 137
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main())
