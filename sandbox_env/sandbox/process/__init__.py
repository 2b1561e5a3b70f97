"""The process backend: bubblewrap namespaces and the project's runner venv, no daemon.

For machines without a Docker engine that can run unprivileged namespaces. Rooms, one job each:

    bwrap.py         what a sandbox sees (namespaces, read-only system view, sized tmpfs); the probe
    cgroups.py       cgroup v2 memory/pids limits where delegated (else rlimits only)
    init.py          PID 1 inside a sandbox: copy in, run, kill everything, copy out (stdlib only)
    launch_check.py  starts a hidden check with its children's interpreter set (stdlib only)
    child_python.py  that interpreter: agent code in a nested sandbox without /checks (stdlib only)
    nested_init.py   PID 1 of that nested sandbox: reaps the command, so wait4's peak RSS carries out
    sandbox.py       ProcessSandbox, which composes them (and its lifecycle class methods)

The runner venv itself is built by ``sandbox_env.runner_env`` (``sandbox-env runner build``).
"""

from __future__ import annotations

from .sandbox import ProcessSandbox

__all__ = ["ProcessSandbox"]
