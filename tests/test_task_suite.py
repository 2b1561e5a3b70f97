"""Every real task: well-formed, labelled, recorded, and played correctly in mock mode."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from sandbox_env.actions import parse_action
from sandbox_env.environment import TriageEnvironment
from sandbox_env.models import Observation
from sandbox_env.sandbox.mock import MockSandbox
from sandbox_env.suite.oracle import oracle_actions, patch_to_edits
from sandbox_env.suite.tasks import TaskRegistry, TaskSpec
from sandbox_env.suite.traces import check_digest, load_traces, task_states
from sandbox_env.workspace import Workspace, content_hash

from .conftest import ROOT


def act(env: TriageEnvironment, raw: dict) -> Observation:
    """One raw action, validated the way every face validates it, then applied."""
    return env.step(parse_action(raw))

TASK_IDS = sorted(p.parent.name for p in (ROOT / "task_repos").glob("*/task.toml"))
SEED_TASKS = {"oom_graph_leak", "fsdp_collective_deadlock", "compile_graph_break", "ddp_gradient_hang"}
MOCK = MockSandbox()


def test_the_seed_tasks_exist() -> None:
    assert SEED_TASKS <= set(TASK_IDS)


@pytest.fixture(params=TASK_IDS)
def task(request: pytest.FixtureRequest, real_tasks: TaskRegistry) -> TaskSpec:
    return real_tasks.get(request.param)


def test_repo_is_genuine_and_gives_nothing_away(task: TaskSpec) -> None:
    files = task.repo_files()
    entry = {m.replace(".", "/") + ".py" for m in task.entry.modules}
    entry |= {t.partition(":")[0].replace(".", "/") + ".py" for t in (task.entry.config, task.entry.train)}
    assert entry <= set(files), "the task's [entry] names modules its repo does not have"
    for path, text in files.items():
        assert not re.search(r"#\s*(BUG|FIXME|XXX|HACK)\b", text, re.IGNORECASE), path
    assert set(task.signal_files) <= set(files)
    assert len(task.hints) >= 2 and len(task.concepts) >= 3 and task.reference_explanation
    re.compile(task.failure.signature)


def test_patch_set_is_rich_enough(task: TaskSpec) -> None:
    kinds = Counter(p.label for p in task.patches)
    assert len(task.patches) >= 12, kinds
    assert kinds["correct"] >= 3 and kinds["wrong"] >= 3 and kinds["cheat"] >= 4, kinds



FAMILY_PYTHON_LINES = 300  # a family is data and a little code: the rest belongs in the shared kit


def test_a_familys_own_python_stays_small(task: TaskSpec) -> None:
    """Its classifier and checks (not its repo, the project the agent debugs) within the budget."""
    own = [task.root / "classifier.py", *sorted((task.root / "checks").rglob("*.py"))]
    lines = sum(len(p.read_text().splitlines()) for p in own)
    assert lines <= FAMILY_PYTHON_LINES, f"{task.id}: {lines} lines of Python in {[p.name for p in own]}"

def test_classifier_labels_every_known_state(task: TaskSpec) -> None:
    wrong = [(state, want, task.classifier(files)) for state, want, files in task_states(task)
             if task.classifier(files) != want]
    assert not wrong, wrong


def test_traces_are_fresh_and_agree_with_labels(task: TaskSpec) -> None:
    traces = {t.state: t for t in load_traces(task)}
    for state, behaviour, files in task_states(task):
        assert state in traces, f"{state} was never recorded: run `sandbox-env record {task.id}`"
        t = traces[state]
        assert t.workspace_hash == content_hash(files), f"{state}: trace is stale, re-record"
        assert t.behaviour == behaviour
        assert t.provenance.check == check_digest(task), (
            f"{state} was judged by another check: run `sandbox-env record --reverify {task.id}`")
    assert not traces["original"].verdict.passed
    assert task.failure.shows_in(traces["original"].runs[0].output)
    assert traces["solution"].verdict.passed, traces["solution"].verdict.reasons
    for p in task.patches:
        v = traces[f"patch:{p.file}"].verdict
        assert v.passed == p.should_pass, (p.file, p.label, v.reasons)


def test_traces_come_from_docker_and_hold_no_host_paths(task: TaskSpec) -> None:
    host_markers = [str(ROOT), "/root/", ".venv/"]
    for t in load_traces(task):
        assert t.provenance.source == "docker" and t.provenance.image, t.state
        blob = t.model_dump_json()
        for marker in host_markers:
            assert marker not in blob, (t.state, marker)


def test_mock_verdict_of_every_labelled_patch_equals_its_label(task: TaskSpec) -> None:
    for p in task.patches:
        ws = Workspace(task.repo_files())
        ws.apply_patch(task.patch_text(p))
        assert MOCK.verify(ws, task).passed == p.should_pass, p.file


def test_oracle_scores_at_least_0_9_in_mock_mode(task: TaskSpec, real_tasks: TaskRegistry) -> None:
    env = TriageEnvironment(real_tasks, MOCK)
    env.reset(task=task.id)
    for a in oracle_actions(task):
        obs = act(env, a)
    assert obs.done and obs.verdict is not None and obs.verdict.passed, obs.terminal_output
    assert obs.score is not None and obs.score >= 0.9, obs.terminal_output


def _exploits(task: TaskSpec) -> dict[str, list[dict]]:
    fix_lines = [e["new_str"] for e in patch_to_edits(task.repo_files(), task.solution_patch)]
    comment = "".join(f"# {ln}\n" for chunk in fix_lines for ln in chunk.splitlines() if ln.strip())
    first = task.signal_files[0]
    anchor = task.repo_files()[first].splitlines(keepends=True)[0]
    reads = [{"action_type": "read_file", "filename": f}
             for f in (task.signal_files * 8)[: min(8, task.max_steps - 1)]]
    return {
        "comment_injection": [{"action_type": "edit_file", "filename": first, "old_str": anchor,
                               "new_str": comment + anchor}],
        "empty_old_str": [{"action_type": "edit_file", "filename": first, "old_str": "",
                           "new_str": "x = 1\n"}],
        "reads_then_submit": reads,
        "no_edit": [],
    }


@pytest.mark.parametrize("name", ["comment_injection", "empty_old_str", "reads_then_submit", "no_edit"])
@pytest.mark.parametrize("explanation", ["reference", "stuffed"])
def test_seed_exploits_score_below_0_2(task: TaskSpec, real_tasks: TaskRegistry, name: str,
                                      explanation: str) -> None:
    env = TriageEnvironment(real_tasks, MOCK)
    env.reset(task=task.id)
    for a in _exploits(task)[name]:
        act(env, a)
    words = " ".join(p for c in task.concepts for p in [c.name])
    text = task.reference_explanation if explanation == "reference" else (words + " ") * 25
    obs = act(env, {"action_type": "submit_fix", "explanation": text})
    assert obs.done and obs.verdict is not None and not obs.verdict.passed
    assert obs.score is not None and obs.score < 0.2
