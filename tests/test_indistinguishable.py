"""What agent code sees in a verification equals what it sees in the agent's own runs (docker mode).

A probe workspace (tests/fixtures/probe_tasks/env_probe) prints its environment, uid, gid,
groups, hostname, cwd, argv, non-stdlib modules, the listings of /, /tmp, /srv and HOME, open
fds, umask and rlimits. It runs as an agent's ``python train.py`` and inside a verification
(the kit's ``command`` from the workspace and from the production dir, and the kit driver).
The declared varied axes are the only differences: the location (cwd, PWD, what /srv holds, and
the production copy is a git checkout while the workspace is not: both ways are exercised), the
deployment's environment there (a scheduler's job variables, a service user, no ``timeout`` in
the process chain) and, under the driver, how the code is entered (argv, modules, the driver's
knobs). One residual is pinned, not hidden: above the nearest ancestor, a verification's
process chain includes the check's own process (``ancestors``; docs/security.md, known gaps).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox_env.kit.child_process import deployment_env
from sandbox_env.suite.tasks import load_task
from sandbox_env.workspace import Workspace

from .test_docker import CLIENT  # skips the module when no engine / image

pytestmark = pytest.mark.docker
assert CLIENT is not None

from sandbox_env.sandbox.docker import DockerSandbox  # noqa: E402

PROBE = Path(__file__).parent / "fixtures" / "probe_tasks" / "env_probe"
LOCATION = {"cwd", "path", "srv", "here"}  # the varied axis of a run from the production dir (+ PWD)
ENTRY = {"argv", "orig_argv", "modules"}  # the varied axis of a run through the driver
DEPLOYED = set(deployment_env("/srv/job", 2))  # what a run as a deployment adds to the environment
ANCESTRY = {"ancestors"}  # the known residual: the check's process is an ancestor in a verification


def probe_of(output: str) -> dict:
    line = next(ln for ln in output.splitlines() if ln.startswith("PROBE "))
    return json.loads(base64.b64decode(line.removeprefix("PROBE ")))


def without(p: dict, keys: set[str], env: set[str] = frozenset()) -> dict:
    out = {k: v for k, v in p.items() if k not in keys}
    out["env"] = {k: v for k, v in p["env"].items() if k not in env}
    return out


@pytest.fixture(scope="module")
def sbx() -> Iterator[DockerSandbox]:
    s = DockerSandbox(owner="pytest-indistinguishable", pool_size=1)
    yield s
    s.close()


def test_agent_code_sees_the_same_in_a_verification_as_in_its_own_runs(sbx: DockerSandbox) -> None:
    task = load_task(PROBE)
    own = probe_of(sbx.run(Workspace(task.repo_files()), "python train.py", task.limits, task).output)
    verdict = sbx.verify(Workspace(task.repo_files()), task)
    ws, at_prod, driver = (probe_of(verdict.evidence[k]) for k in ("workspace", "production", "driver"))

    # the repo's command from the workspace: nothing differs but the known residual, and the
    # nearest ancestor (the agent's `timeout`) is the same
    assert without(ws, ANCESTRY) == without(own, ANCESTRY)
    assert ws["ancestors"][0] == own["ancestors"][0] == "timeout"
    assert len(ws["ancestors"]) > len(own["ancestors"])  # the residual: the check above it
    assert own["tmp"] == [] and own["srv"] == [] and "checks" in own["root"]
    assert own["uid"] == own["gid"] == 1000 and own["groups"] == [1000] and own["hostname"] == "localhost"
    # from the production dir: the location and the deployment (the agent can make the same)
    axes, env = LOCATION | ANCESTRY, {"PWD", *DEPLOYED}
    assert without(at_prod, axes, env) == without(own, axes, env)
    assert DEPLOYED <= set(at_prod["env"]) and not DEPLOYED & set(own["env"]) - {"USER", "LOGNAME"}
    assert at_prod["env"]["USER"] != own["env"].get("USER") and at_prod["ancestors"][0] != "timeout"
    assert at_prod["cwd"] == task.verify.production_dir and at_prod["srv"] == ["probe-job"]
    assert ".git" not in own["here"] and at_prod["here"] == sorted([*own["here"], ".git"])
    # through the driver (also started by bash, under the same limits): the location and the
    # entry (argv, modules imported before agent code) differ, nothing else
    assert without(driver, axes | ENTRY, env) == without(own, axes | ENTRY, env)
    assert DEPLOYED <= set(driver["env"]) and driver["ancestors"][0] != "timeout"
