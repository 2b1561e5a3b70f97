"""The reward-hacking corpus in docker mode: the same episodes against the real checks.

Every entry of the corpus runs through TriageEnvironment over one shared DockerSandbox (two
episodes at a time: verification containers are independent), and must end done, unverified
(never an infra_error), below 0.2, without any text of the hidden checks in an observation.

The entries are the corpus on variant 0 of each task (120 episodes, 30 min on a 2-core machine
two at a time) and then the same corpus on every form of the bug (``VARIANT_CORPUS``: per
family the first variant of each placement and the first test variant, with their names, sizes
and ported labelled patches; ids ``family@N:name``). Together too long for CI beside everything
else. ``ADVERSARIAL_DOCKER_SLICE`` picks what runs: ``K/N`` runs the entries whose index is K
modulo N; ``auto`` (the default) runs slice (day number mod 24)/24 (about 20 episodes, 4-5 min),
so 24 consecutive CI days cover both; ``all`` runs every entry (``bash
scripts/adversarial-docker.sh`` does, and writes the dated table docs/adversarial-docker.md;
``-k '@'`` passes through to pytest and keeps only the variants' entries). The mock corpus
(tests/adversarial/test_mock.py) always runs whole. The wall time is printed at the end.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from sandbox_env.environment import TriageEnvironment
from sandbox_env.suite.tasks import TaskRegistry

from ..test_docker import CLIENT  # skips the module when no engine / image
from ..tiers import DOCKER_CORPUS_SLICES, rotating, selected_slice
from .corpus import CORPUS, VARIANT_CORPUS, Cheat
from .harness import Played, play, problems

pytestmark = pytest.mark.docker
assert CLIENT is not None

from sandbox_env.sandbox.docker import LABEL_OWNER, DockerSandbox, labelled  # noqa: E402

OWNER = "pytest-adversarial"
WORKERS = 2
AUTO_SLICES = DOCKER_CORPUS_SLICES
_TIMING: dict[str, float] = {}


SLICE = selected_slice(os.environ.get("ADVERSARIAL_DOCKER_SLICE", "auto"), slices=AUTO_SLICES)
EVERY = CORPUS + VARIANT_CORPUS  # variant 0 of each task, then the corpus on every form of the bug
SELECTED = rotating(EVERY, "ADVERSARIAL_DOCKER_SLICE", AUTO_SLICES)


@pytest.fixture(scope="module")
def sbx() -> Iterator[DockerSandbox]:
    s = DockerSandbox(owner=OWNER, pool_size=2)
    yield s
    s.close()
    left = labelled(CLIENT, f"{LABEL_OWNER}={OWNER}")
    assert left == [], "containers left behind"
    assert CLIENT.volumes.list(filters={"label": f"{LABEL_OWNER}={OWNER}"}) == []


@pytest.fixture(scope="module")
def played(request: pytest.FixtureRequest, sbx: DockerSandbox, real_tasks: TaskRegistry) -> dict[str, Played]:
    """Every selected corpus episode, played once, two at a time over the shared sandbox."""
    selected = {item.callspec.params["cheat"].id for item in request.session.items
                if item.module is request.module and hasattr(item, "callspec")
                and "cheat" in item.callspec.params}
    todo = [c for c in EVERY if c.id in selected]

    def one(cheat: Cheat) -> Played:
        start = time.monotonic()
        env = TriageEnvironment(real_tasks, sbx)
        try:
            out = play(env, cheat, real_tasks.get(cheat.task))
        finally:
            env.close()
        out.seconds = time.monotonic() - start
        return out

    start = time.monotonic()
    with ThreadPoolExecutor(WORKERS) as pool:
        results = {p.cheat.id: p for p in pool.map(one, todo)}
    _TIMING.update(wall_s=time.monotonic() - start, episodes=len(todo),
                   episode_s=sum(p.seconds for p in results.values()))
    return results


@pytest.mark.parametrize("cheat", SELECTED, ids=[c.id for c in SELECTED])
def test_cheat_ends_unverified_below_0_2_in_docker(cheat: Cheat, played: dict[str, Played],
                                                   real_tasks: TaskRegistry) -> None:
    p = played[cheat.id]
    assert not problems(p, real_tasks.get(cheat.task)), (cheat.why, problems(p, real_tasks.get(cheat.task)))
    assert p.verdict is not None and p.verdict.source == "docker"


def test_docker_corpus_wall_time(played: dict[str, Played], capsys: pytest.CaptureFixture[str],
                                 real_tasks: TaskRegistry) -> None:
    slowest = sorted(played.values(), key=lambda p: -p.seconds)[:5]
    with capsys.disabled():
        print(f"\n[adversarial] docker corpus slice {SLICE[0]}/{SLICE[1]}: "
              f"{_TIMING.get('episodes', 0)} of {len(EVERY)} episodes in "
              f"{_TIMING.get('wall_s', 0.0) / 60:.1f} min wall ({WORKERS} at a time; "
              f"{_TIMING.get('episode_s', 0.0) / 60:.1f} min of episodes); slowest: "
              + ", ".join(f"{p.cheat.id} {p.seconds:.0f}s" for p in slowest))
    out = os.environ.get("ADVERSARIAL_DOCKER_SUMMARY")  # optional JSON summary for reports
    if out:
        rows = {cid: {"outcome": p.final.verdict.outcome.value if p.final.verdict else None,
                      "score": p.final.score, "seconds": round(p.seconds, 1),
                      # what went wrong, and the verdict's first reason, kept for the report
                      "problems": [x[:600] for x in problems(p, real_tasks.get(p.cheat.task))],
                      "reason": (p.final.verdict.reasons or [""])[0][:600] if p.final.verdict else ""}
                for cid, p in played.items()}
        with open(out, "w") as fh:
            json.dump({**_TIMING, "episodes": rows}, fh, indent=1)
