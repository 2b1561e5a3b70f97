"""Process mode: what agent code sees in a verification against its own runs (bubblewrap).

The probe workspace of tests/test_indistinguishable.py, run as an agent's ``python train.py``
and inside a verification. Process mode equalises less than docker mode, and this test pins
exactly what differs: the declared varied axes (location, entry) and its known residuals (the
interpreter path in argv[0], no bash in between, the verification sandbox's rlimits).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sandbox_env.sandbox.process import ProcessSandbox
from sandbox_env.suite.tasks import load_task
from sandbox_env.workspace import Workspace

from .test_indistinguishable import ANCESTRY, DEPLOYED, ENTRY, LOCATION, PROBE, probe_of, without

OK, WHY = ProcessSandbox.available()
if not OK:
    pytest.skip(f"process mode not available: {WHY}", allow_module_level=True)

# what process mode does not equalise: the interpreter path in argv[0], the verification
# sandbox's rlimits (4 GB data, no CPU limit)
RESIDUAL = {"orig_argv", "executable", "rlimits", *ANCESTRY}
BASH = {"SHLVL", "_", "PWD"}  # the agent's command runs through bash; the check's children do not


@pytest.fixture(scope="module")
def sbx() -> Iterator[ProcessSandbox]:
    s = ProcessSandbox()
    yield s
    s.close()


def test_process_mode_differs_only_in_declared_axes_and_known_residuals(sbx: ProcessSandbox) -> None:
    task = load_task(PROBE)
    own = probe_of(sbx.run(Workspace(task.repo_files()), "python train.py", task.limits, task).output)
    verdict = sbx.verify(Workspace(task.repo_files()), task)
    ws, at_prod, driver = (probe_of(verdict.evidence[k]) for k in ("workspace", "production", "driver"))
    assert own["srv"] == [] and own["uid"] == 1000 and own["hostname"] == "localhost"
    assert without(ws, RESIDUAL, BASH) == without(own, RESIDUAL, BASH)
    assert ws["tmp"] == [] and ws["home"] == []  # the check's scratch is not in the shared /tmp
    assert without(at_prod, RESIDUAL | LOCATION, BASH | DEPLOYED) == \
        without(own, RESIDUAL | LOCATION, BASH | DEPLOYED)
    assert DEPLOYED <= set(at_prod["env"]) and at_prod["env"]["USER"] != own["env"].get("USER")
    assert at_prod["srv"] == ["probe-job"] and at_prod["here"] == sorted([*own["here"], ".git"])
    # torch sets its inductor cache dir in the environment when none is set (the driver imports it)
    assert without(driver, RESIDUAL | LOCATION | ENTRY, BASH | DEPLOYED | {"TORCHINDUCTOR_CACHE_DIR"}) == \
        without(own, RESIDUAL | LOCATION | ENTRY, BASH | DEPLOYED | {"TORCHINDUCTOR_CACHE_DIR"})
