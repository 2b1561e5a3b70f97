"""Run a `sandbox-env` command (record, certify, ...) with this family's own container owner.

`record` and `certify` hard-code their owner ("record", "certify"), and a DockerSandbox reaps its
owner's leftover containers on start: another helper's job of the same name would be reaped.
Usage (under the shared lock):
  flock /tmp/sandbox-docker.lock .venv/bin/python staging/resume_without_optimizer_state/tools/docker_ops.py record resume_without_optimizer_state --mode docker
"""
import pathlib as _pathlib; ROOT = str(_pathlib.Path(__file__).resolve().parents[3])  # the repository
import sys

import sandbox_env.cli.common as common
import sandbox_env.cli.operations as operations
from sandbox_env.cli import main

OWNER = "fam-resume_without_optimizer_state"
_real = common.real_sandbox


def _owned(args, owner):
    return _real(args, OWNER)


operations.real_sandbox = _owned
common.real_sandbox = _owned
sys.exit(main(["--task-root", ROOT + "/staging/resume_without_optimizer_state", *sys.argv[1:]]))
