"""What agent code sees in a verification equals what it sees in the agent's own runs (docker mode).

A probe workspace (tests/fixtures/probe_tasks/env_probe) prints its environment, uid, gid,
groups, hostname, cwd, argv, non-stdlib modules, the listings of /, /tmp, /srv and HOME, open
fds, umask and rlimits. It runs as an agent's ``python train.py`` and inside a verification
(the kit's ``command`` from the workspace and from the production dir, and the kit driver).
The declared varied axes are the only differences: the location (cwd, PWD, what /srv holds) and,
under the driver, how the code is entered (argv, modules, the driver's knobs).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox_env.tasks import load_task
from sandbox_env.workspace import Workspace

from .test_docker import CLIENT  # skips the module when no engine / image

pytestmark = pytest.mark.docker
assert CLIENT is not None

from sandbox_env.sandbox.docker import DockerSandbox  # noqa: E402

PROBE = Path(__file__).parent / "fixtures" / "probe_tasks" / "env_probe"
LOCATION = {"cwd", "path", "srv"}  # the varied axis of a run from the production dir (+ PWD)
ENTRY = {"argv", "orig_argv", "modules"}  # the varied axis of a run through the driver


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

    assert ws == own  # the repo's command from the workspace: nothing differs at all
    assert own["tmp"] == [] and own["srv"] == [] and "checks" in own["root"]
    assert own["uid"] == own["gid"] == 1000 and own["groups"] == [1000] and own["hostname"] == "localhost"
    # from the production dir: only the location differs (the agent can make the same copy)
    assert without(at_prod, LOCATION, {"PWD"}) == without(own, LOCATION, {"PWD"})
    assert at_prod["cwd"] == task.verify.production_dir and at_prod["srv"] == ["probe-job"]
    # through the driver (also started by bash, under the same limits): the location and the
    # entry (argv, modules imported before agent code) differ, nothing else
    assert without(driver, LOCATION | ENTRY, {"PWD"}) == without(own, LOCATION | ENTRY, {"PWD"})
