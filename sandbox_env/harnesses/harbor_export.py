"""The Harbor export: each task variant written as a Harbor task folder (``sandbox-env export harbor``).

This module has one job: turn ``family@N`` into the folder Harbor (``harbor`` 0.26, the
Terminal-Bench 2 framework) runs, without importing Harbor::

    <out>/<family>-<N>/
      task.toml          agent and verifier users and timeouts, resources, ``artifacts =
                         ["/workspace"]``, ``[verifier] environment_mode = "separate"``
      instruction.md     the incident report, where the repo is, the run command, and the
                         episode instructions' paragraph on how the fix is verified
      environment/       Dockerfile FROM the runner image, the repo at /workspace (uid 1000), the
                         run environment of every sandbox (threads, gloo) and the task's data cap
                         on every Python process of uid 1000 (a ``.pth`` hook in site-packages)
      tests/             the verifier's own image (Harbor's separate-verifier form): Dockerfile
                         FROM the runner image with the hidden check and its kit in root-only
                         /checks, and test.sh, which runs the check on the /workspace Harbor copies
                         over from the stopped agent container, reads the nonce-marked verdict
                         line and writes /logs/verifier/reward.txt (1 verified, 0 not) and
                         verdict.json (outcome, reasons)
      solution/solve.sh  the reference fix: writes the fixed files into /workspace

The check runs as root in a fresh container and runs agent code as uid 1000 exactly as the docker
backend's verification does (``sandbox/docker/verifier.py``: same entry point, environment, nonce
protocol); the agent's container is stopped before it starts, so nothing the agent left running
can see or forge it. The reward is 1/0 (verified or not): Harbor has no explanation to judge,
so the episode's terminal score (which weighs the explanation) does not apply.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
from pathlib import Path
from typing import Any

from ..instructions import INSTRUCTIONS
from ..sandbox.verification import CHECK_BUDGET_S, check_env, check_files
from ..suite.tasks import TaskSpec
from ..workspace import Workspace
from .common import registry, task_ids

RUNNER_IMAGE = os.environ.get("SANDBOX_ENV_RUNNER_IMAGE", "sandbox-env-runner:torch2.13.0")
WORKSPACE_DIR, CHECKS_DIR, SANDBOX_UID = "/workspace", "/checks", 1000
VERIFY_MIN_MEMORY_MB, VERIFY_CPUS = 4096, 2  # as the docker backend's verification boxes
AGENT_TIMEOUT_S = 3600.0
SITE_PACKAGES = "/opt/venv/lib/python3.11/site-packages"
# a .pth line runs at every interpreter start (Debian's own sitecustomize shadows one in a venv)
DATA_CAP_MODULE = "sandbox_env_data_cap"

REWARD_PY = '''\
"""Read the hidden check's verdict line (nonce-marked) and write Harbor's reward files."""
import json
import sys

sys.path.insert(0, "/checks")
from verdict_protocol import parse_verdict

nonce, output, logs = sys.argv[1:4]
with open(output, errors="replace") as f:
    data = parse_verdict(f.read(), nonce)
if data is None:
    verdict = {"passed": False, "outcome": "infra_error",
               "reasons": ["the hidden check produced no verdict (see check-output.txt)"]}
else:
    verdict = {"passed": bool(data.get("passed")) and data.get("outcome") == "passed",
               "outcome": data.get("outcome"), "reasons": data.get("reasons", [])}
with open(f"{logs}/verdict.json", "w") as f:
    json.dump(verdict, f, indent=1)
with open(f"{logs}/reward.txt", "w") as f:
    f.write("1" if verdict["passed"] else "0")
print(json.dumps(verdict, indent=1))
'''

DATA_CAP_PY = '''\
"""sandbox-env: the job's data-segment cap ({mb} MB) on every Python process of uid 1000, as
every sandbox run gets it (``prlimit --data``); the incident happens under it."""
import os
import resource

if os.getuid() == {uid}:
    try:
        resource.setrlimit(resource.RLIMIT_DATA, ({bytes}, {bytes}))
    except (ValueError, OSError):
        pass
'''


def _run_env(task: TaskSpec) -> dict[str, str]:
    """What every sandbox command runs with (``sandbox/docker/containers.run_env``)."""
    threads = str(max(1, int(task.limits.cpus)))
    return {"OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads, "HOME": "/tmp",
            "TMPDIR": "/tmp", "PYTHONUNBUFFERED": "1", "GLOO_SOCKET_IFNAME": ""}


def instruction(task: TaskSpec) -> str:
    """The agent's instruction: the incident report, the repo, the run command, and how the fix
    is judged (the episode instructions' last paragraph, as an HTTP agent reads it)."""
    files = ", ".join(task.repo_files())
    verified = INSTRUCTIONS.strip().split("\n\n")[-1]  # no explanation in Harbor: its scoring goes
    verified = verified.replace(" The explanation is scored only for a verified fix.", "")
    return (f"{task.incident_report.strip()}\n\n"
            f"The training repository is at {WORKSPACE_DIR} ({files}). Reproduce the failure "
            f"with `{task.run_command}` from {WORKSPACE_DIR}, find the root cause in the code and "
            f"fix it there with minimal, correct edits.\n\n{verified}\n")


def task_toml(task: TaskSpec, split: str) -> str:
    lim = task.limits
    meta = {"family": task.family, "variant": task.variant_index, "split": split,
            "sandbox_env_task": task.address, "difficulty": getattr(task, "difficulty", ""),
            "category": getattr(task, "category", ""), "run_command": task.run_command,
            "reward": "1 when the hidden check verifies the fix, else 0"}
    lines = ["# Generated by `sandbox-env export harbor` (docs/harnesses.md): do not edit.",
             f'artifacts = ["{WORKSPACE_DIR}"]', "", "[metadata]"]
    lines += [f"{k} = {json.dumps(v)}" for k, v in meta.items()]
    lines += ["", "[agent]", f"timeout_sec = {AGENT_TIMEOUT_S}", f"user = {SANDBOX_UID}",
              "", "[verifier]", f"timeout_sec = {CHECK_BUDGET_S + 60}", 'user = "root"',
              'environment_mode = "separate"',
              "", "[verifier.environment]", f"cpus = {VERIFY_CPUS}",
              f"memory_mb = {max(VERIFY_MIN_MEMORY_MB, lim.memory_mb)}",
              "", "[environment]", "build_timeout_sec = 900.0",
              f"cpus = {max(1, int(lim.cpus))}", f"memory_mb = {max(2048, lim.memory_mb)}"]
    return "\n".join(lines) + "\n"


def _env_lines(env: dict[str, str]) -> str:
    return "ENV " + " \\\n    ".join(f"{k}={json.dumps(v)}" for k, v in sorted(env.items()))


def environment_dockerfile(task: TaskSpec) -> str:
    lines = [f"FROM {RUNNER_IMAGE}", "USER root", f"COPY workspace/ {WORKSPACE_DIR}/"]
    if task.limits.data_mb:
        lines.append(f"COPY {DATA_CAP_MODULE}.py {DATA_CAP_MODULE}.pth {SITE_PACKAGES}/")
    lines += [f"RUN chown -R {SANDBOX_UID}:{SANDBOX_UID} {WORKSPACE_DIR} && mkdir -p /srv "
              f"&& chown {SANDBOX_UID}:{SANDBOX_UID} /srv", _env_lines(_run_env(task)),
              f"WORKDIR {WORKSPACE_DIR}"]
    return "\n".join(lines) + "\n"


def verifier_dockerfile() -> str:
    return "\n".join([
        f"FROM {RUNNER_IMAGE}", "USER root", f"COPY checks/ {CHECKS_DIR}/", "COPY test.sh /tests/test.sh",
        f"RUN chmod -R go-rwx {CHECKS_DIR} && chmod 755 /tests/test.sh && mkdir -p /srv {WORKSPACE_DIR} "
        f"&& chown {SANDBOX_UID}:{SANDBOX_UID} /srv {WORKSPACE_DIR}",
        f"WORKDIR {WORKSPACE_DIR}"]) + "\n"


def test_sh(task: TaskSpec) -> str:
    """Run the hidden check as the docker backend's verification does, then write the reward."""
    env = {**check_env(_run_env(task), f"{CHECKS_DIR}/.run"), "SANDBOX_CHILD_UID": str(SANDBOX_UID)}
    assigns = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(env.items()))
    return "\n".join([
        "#!/bin/bash",
        "# sandbox-env hidden check, run in Harbor's separate verifier container (generated).",
        "set -u",
        "mkdir -p /logs/verifier",
        f"chown -R {SANDBOX_UID}:{SANDBOX_UID} {WORKSPACE_DIR}  # the agent's files, copied over by Harbor",
        "nonce=$(python3 -c 'import secrets; print(secrets.token_hex(16))')",
        f'printf "%s\\n" "$nonce" | env {assigns} \\',
        f"  timeout {int(CHECK_BUDGET_S)} python3 {CHECKS_DIR}/check.py --workspace {WORKSPACE_DIR} \\",
        "  > /logs/verifier/check-output.txt 2>&1",
        'echo "check exit code $?"',
        f'python3 {CHECKS_DIR}/harbor_reward.py "$nonce" /logs/verifier/check-output.txt /logs/verifier',
        ""])


def solve_sh(task: TaskSpec) -> tuple[str, dict[str, str]]:
    """solve.sh and the files it copies: the repo with the reference fix applied."""
    ref = Workspace(task.repo_files())
    ref.apply_patch(task.solution_patch)
    changed = {p: t for p, t in ref.files.items() if task.repo_files().get(p) != t}
    script = ["#!/bin/bash", "# The reference fix of this task (sandbox-env's solution.patch), applied.",
              "set -euo pipefail", f"cp -r /solution/files/. {WORKSPACE_DIR}/",
              f'echo "applied the reference fix to: {", ".join(sorted(changed))}"', ""]
    return "\n".join(script), changed


def _write(path: Path, content: str | bytes, mode: int | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    if mode is not None:
        path.chmod(mode)


def export_task(task: TaskSpec, dest: Path, split: str) -> Path:
    """Write one Harbor task folder for ``task`` at ``dest`` (replaced if present)."""
    if dest.exists():
        shutil.rmtree(dest)
    _write(dest / "task.toml", task_toml(task, split))
    _write(dest / "instruction.md", instruction(task))
    env_dir = dest / "environment"
    _write(env_dir / "Dockerfile", environment_dockerfile(task))
    for rel, text in task.repo_files().items():
        _write(env_dir / "workspace" / rel, text)
    if task.limits.data_mb:
        mb = task.limits.data_mb
        _write(env_dir / f"{DATA_CAP_MODULE}.py",
               DATA_CAP_PY.format(mb=mb, uid=SANDBOX_UID, bytes=mb * 1024 * 1024))
        _write(env_dir / f"{DATA_CAP_MODULE}.pth", f"import {DATA_CAP_MODULE}\n")
    tests = dest / "tests"
    _write(tests / "Dockerfile", verifier_dockerfile())
    _write(tests / "test.sh", test_sh(task), 0o755)
    for rel, data in check_files(task).items():
        _write(tests / "checks" / rel, data)
    _write(tests / "checks" / "harbor_reward.py", REWARD_PY)
    script, changed = solve_sh(task)
    _write(dest / "solution" / "solve.sh", script, 0o755)
    for rel, text in changed.items():
        _write(dest / "solution" / "files" / rel, text)
    return dest


def folder_name(task: TaskSpec) -> str:
    return f"{task.family}-{task.variant_index}"


def export_harbor(out: Path, split: str = "test", tasks: list[str] | str | None = None,
                  task_root: str | Path | None = None) -> list[Path]:
    """Write one Harbor task per ``family@variant`` of ``split`` (narrowed to ``tasks``) under
    ``out``; returns the folders written."""
    out.mkdir(parents=True, exist_ok=True)
    reg = registry(task_root)
    written = []
    for tid in task_ids(split, tasks, task_root):
        spec = reg.get(tid)
        written.append(export_task(spec, out / folder_name(spec), split))
    return written


def summary(folders: list[Path]) -> dict[str, Any]:
    return {"tasks": [f.name for f in folders], "count": len(folders)}


__all__ = ["RUNNER_IMAGE", "export_harbor", "export_task", "folder_name", "instruction"]
