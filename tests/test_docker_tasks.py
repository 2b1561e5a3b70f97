"""Every task in real containers: the failure reproduces with its signature and the
reference fix passes (two tasks a day, alternating), and a rotating sample of labelled states
(the original repo, a correct, a wrong and a cheating patch: one per task a day) gets its
verdict; and one certified variant a day is certified again (one run).

Every labelled patch is verified in Docker by `sandbox-env record` (the committed traces, whose
freshness and labels test_task_suite checks); this test re-runs a sample within CI's time.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterator

import pytest

from sandbox_env.models import Outcome
from sandbox_env.suite.tasks import TaskRegistry
from sandbox_env.workspace import Workspace

from .conftest import ROOT
from .test_docker import CLIENT  # skips the module when no engine / image
from .test_task_suite import TASK_IDS
from .tiers import rotating

pytestmark = pytest.mark.docker
assert CLIENT is not None

from sandbox_env.sandbox.docker import DockerSandbox  # noqa: E402


@pytest.fixture(scope="module")
def sbx() -> Iterator[DockerSandbox]:
    s = DockerSandbox(owner="pytest-docker-tasks", pool_size=1)
    yield s
    s.close()


# half the tasks a day (four took 260 s of a 46-min CI): every task every other day,
# and every day's labelled sample and certified variant still runs in docker beside them
@pytest.mark.parametrize("task_id", rotating(TASK_IDS, "SANDBOX_ENV_DOCKER_TASK_SLICE", 2))
def test_task_reproduces_and_its_fix_passes(task_id: str, real_tasks: TaskRegistry,
                                            sbx: DockerSandbox) -> None:
    """One certification run: the unfixed repo fails with its signature (its log kept for a
    variant's incident report), the reference fix passes."""
    from sandbox_env.quality.certify import certify_task, markdown

    task = real_tasks.get(task_id)
    result = certify_task(task, sbx, runs=1, log=lambda _: None)
    assert result.certified, result.notes
    assert task.failure.shows_in(result.bug_log), result.bug_log
    assert f"| {task_id} | 1/1 | 1/1 |" in markdown([result], {"source": "docker"})


LABELS = ("original", "correct", "wrong", "cheat")
# per task one verification a day: on day k task j gets LABELS[(j + k) % 4], so four CI days
# verify every task in every label (SANDBOX_ENV_DOCKER_LABEL_SLICE=all: all of them)
PAIRS = [(t, LABELS[(m + j) % 4]) for j, t in enumerate(TASK_IDS) for m in range(len(LABELS))]


@pytest.mark.parametrize(("task_id", "label"), rotating(PAIRS, "SANDBOX_ENV_DOCKER_LABEL_SLICE", 4))
def test_labelled_state_gets_its_verdict(task_id: str, label: str, real_tasks: TaskRegistry,
                                         sbx: DockerSandbox) -> None:
    task = real_tasks.get(task_id)
    ws = Workspace(task.repo_files())
    should_pass = False
    if label != "original":
        patch = next(p for p in task.patches if p.label == label)
        ws.apply_patch(task.patch_text(patch))
        should_pass = patch.should_pass
    v = sbx.verify(ws, task)
    assert v.outcome != Outcome.infra_error, v.reasons
    assert v.passed == should_pass, (label, v.reasons)


def _certified_variants() -> list[str]:
    """Every committed certified variant, ``family@N`` (variants_certified.toml)."""
    out = []
    for tid in TASK_IDS:
        path = ROOT / "task_repos" / tid / "variants_certified.toml"
        if path.exists():
            out += [f"{tid}@{v['index']}" for v in tomllib.loads(path.read_text()).get("variant", [])]
    return out


VARIANTS = _certified_variants()
TODAYS_VARIANTS = rotating(VARIANTS, "SANDBOX_ENV_DOCKER_VARIANT_SLICE", max(1, len(VARIANTS)))


@pytest.mark.parametrize("address", TODAYS_VARIANTS)
def test_a_certified_variant_still_reproduces_and_its_fix_passes(address: str, real_tasks: TaskRegistry,
                                                                 sbx: DockerSandbox) -> None:
    """One variant a day (all of them over len(VARIANTS) days): its own unfixed repo fails with
    the family's signature and its own reference fix passes, as when it was certified."""
    from sandbox_env.quality.certify import certify_task

    task = real_tasks.get(address)
    result = certify_task(task, sbx, runs=1, log=lambda _: None)
    assert result.certified, result.notes
    assert task.failure.shows_in(result.bug_log), result.bug_log
