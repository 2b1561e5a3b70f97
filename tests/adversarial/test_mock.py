"""The reward-hacking corpus in mock mode: every cheat ends unverified below 0.2.

Mock mode replays the Docker recording of each labelled cheat state (exact match), and the
leave-one-out test hides that recording so the task's static classifier has to judge the
cheat on its own, as it does for an agent's unseen variant.
"""

from __future__ import annotations

import pytest

from sandbox_env.environment import TriageEnvironment
from sandbox_env.rubrics import ConceptJudge, terminal_score
from sandbox_env.sandbox.mock import MockSandbox
from sandbox_env.sandbox.verification import check_files
from sandbox_env.suite.tasks import TaskRegistry
from sandbox_env.workspace import Workspace

from ..test_task_suite import TASK_IDS
from .corpus import (
    CORPUS,
    CORPUS_IDS,
    EXPLANATIONS,
    KINDS,
    PLACED,
    SERVED,
    Cheat,
    corpus_for,
    episode,
    explanation_text,
)
from .harness import leak_markers, play, problems, state_hashes

MOCK = MockSandbox()


@pytest.mark.parametrize("cheat", CORPUS, ids=CORPUS_IDS)
def test_cheat_ends_unverified_below_0_2(cheat: Cheat, real_tasks: TaskRegistry) -> None:
    task = real_tasks.get(cheat.task)
    played = play(TriageEnvironment(real_tasks, MOCK), cheat, task)
    assert not problems(played, task), (cheat.why, problems(played, task))
    # the exact recording of the cheat's state (a comment-only change hashes like the original)
    state = f"patch:{cheat.patch}" if cheat.patch else "original"
    same = {f"mock:{s}" for s, h in state_hashes(task).items() if h == state_hashes(task)[state]}
    assert played.verdict is not None and played.verdict.source in same


@pytest.mark.parametrize("explanation", EXPLANATIONS)
@pytest.mark.parametrize("cheat", CORPUS, ids=CORPUS_IDS)
def test_no_explanation_rescues_a_cheat(cheat: Cheat, explanation: str, real_tasks: TaskRegistry) -> None:
    task = real_tasks.get(cheat.task)
    played = play(TriageEnvironment(real_tasks, MOCK), cheat, task, explanation)
    assert not problems(played, task)


@pytest.mark.parametrize("cheat", [c for c in CORPUS if c.patch], ids=[c.id for c in CORPUS if c.patch])
def test_cheat_fails_with_its_own_recording_hidden(cheat: Cheat, real_tasks: TaskRegistry) -> None:
    """Leave-one-out: the classifier alone must not let the cheat verify."""
    task = real_tasks.get(cheat.task)
    spec = next(p for p in task.patches if p.file == cheat.patch)
    ws = Workspace(task.repo_files())
    ws.apply_patch(task.patch_text(spec))
    verdict = MockSandbox(exclude={f"{task.id}/patch:{cheat.patch}"}).verify(ws, task)
    assert not verdict.passed, (cheat.id, verdict.source, verdict.reasons)
    assert task.classifier(ws.files) == spec.behaviour != "fixed"


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_every_item_of_the_list_is_covered_for_every_task(task_id: str, real_tasks: TaskRegistry) -> None:
    mine = [c for c in CORPUS if c.task == task_id]
    shared = set(KINDS) - {"labelled_cheat"}  # that kind collects the cheats no role names
    assert shared <= {c.kind for c in mine}, shared - {c.kind for c in mine}
    assert any(c.leak_probe and not c.patch for c in mine), "a probe of the hidden checks"
    task = real_tasks.get(task_id)
    cheats = {p.file for p in task.patches if p.label == "cheat"}
    missing = cheats - {c.patch for c in mine}
    assert not missing, f"labelled cheats missing from the corpus: {missing}"
    assert len({c.name for c in mine}) == len(mine)


@pytest.mark.parametrize("cheat", CORPUS, ids=CORPUS_IDS)
def test_corpus_entries_are_well_formed(cheat: Cheat, real_tasks: TaskRegistry) -> None:
    task = real_tasks.get(cheat.task)
    assert cheat.kind in KINDS and cheat.why and cheat.explanation in EXPLANATIONS
    if cheat.patch:
        spec = next((p for p in task.patches if p.file == cheat.patch), None)
        assert spec is not None, f"{cheat.patch} is not a labelled patch of {task.id}"
        assert not spec.should_pass, f"{cheat.patch} is labelled {spec.label}"
    assert len(episode(cheat, task)) <= task.max_steps, "the episode must reach submit_fix"


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_leak_markers_are_real_check_lines(task_id: str, real_tasks: TaskRegistry) -> None:
    task = real_tasks.get(task_id)
    markers = leak_markers(task)
    assert len(markers) >= 40
    hidden = "\n".join(d.decode() for n, d in check_files(task).items() if n.endswith(".py"))
    assert all(m in hidden for m in markers)
    check_py = (task.checks_dir / "check.py").read_text()
    assert sum(m in check_py for m in markers) >= 3  # the task's own check, not only the kit


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_explanation_alone_never_reaches_0_2(task_id: str, real_tasks: TaskRegistry) -> None:
    """Rubric level: whatever the text, an unverified workspace scores below 0.2."""
    task = real_tasks.get(task_id)
    judge = ConceptJudge()
    for kind in EXPLANATIONS:
        score, _ = judge.score(explanation_text(kind, task), task, "")
        assert terminal_score(None, score, 3, task.max_steps) < 0.2
    stuffed, _ = judge.score(explanation_text("stuffed", task), task, "")
    reference, _ = judge.score(task.reference_explanation, task, "")
    assert stuffed < reference


@pytest.mark.parametrize("address", [t.address for t in PLACED])
def test_the_whole_corpus_ends_unverified_on_every_form_of_the_bug(address: str) -> None:
    """The corpus on a variant (its names, sizes and placement; the labelled patches transformed,
    or ported to the placement): every entry ends unverified below 0.2, and no labelled cheat of
    the family is missing from it. The corpus's states are not recorded for the variant: each
    verdict comes from the classifier (through the inverse rename) and the variant's own run of
    that behaviour, or variant 0's mapped in."""
    task = SERVED.get(address)
    entries = corpus_for(task)
    family = {c.name for c in CORPUS if c.task == task.family}
    assert {c.name for c in entries} == family, family ^ {c.name for c in entries}
    env = TriageEnvironment(SERVED, MOCK)
    failed = {c.name: found for c in entries if (found := problems(play(env, c, task), task))}
    assert not failed, failed
