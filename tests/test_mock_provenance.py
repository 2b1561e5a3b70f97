"""Every mock verdict says how it was reached, and an unsure one is never scored (toy task).

recorded: this exact state was run for real; inferred: the classifier matched a recorded
behaviour; unsure: the classifier cannot tell, so the episode ends unscored, the eval runner
counts it apart and the TRL reward function gives no reward (None) for it.
"""

from __future__ import annotations

from types import SimpleNamespace

from sandbox_env.actions import parse_action
from sandbox_env.environment import TriageEnvironment
from sandbox_env.eval.records import EXCLUDED_STATUSES, FINISHED_STATUSES
from sandbox_env.sandbox.mock import MockSandbox
from sandbox_env.suite.tasks import TaskRegistry
from sandbox_env.trl import TriageToolEnv, reward_fn
from sandbox_env.workspace import Workspace

OTHER_MEAN = ("    total = 0.0\n    for v in values:\n        total += v\n"
              "    return total / (len(values) - 1)\n",
              "    import statistics\n    return statistics.fmean(values)\n")


def _ws(tasks: TaskRegistry, *edits: tuple[str, str]) -> Workspace:
    ws = Workspace(tasks.get("toy_mean").repo_files())
    for old, new in edits:
        ws.edit("stats.py", old, new)
    return ws


def test_each_verdict_names_its_provenance(toy_tasks: TaskRegistry) -> None:
    task, mock = toy_tasks.get("toy_mean"), MockSandbox()
    recorded = mock.verify(Workspace(task.repo_files()), task)
    assert recorded.provenance == "recorded" and not recorded.passed
    # a comment makes a state never recorded, same code: the classifier names the behaviour
    inferred = mock.verify(_ws(toy_tasks, ("    total = 0.0\n", "    total = 0.0  # sum\n"),
                               ("(len(values) - 1)", "len(values)")), task)
    assert inferred.provenance in ("recorded", "inferred") and inferred.passed
    other = mock.verify(_ws(toy_tasks, ("(len(values) - 1)", "len(values)"),
                            ("    total = 0.0\n", "    total = 0.0\n    scale = 1.0\n")), task)
    assert other.provenance == "inferred" and other.passed
    unsure = mock.verify(_ws(toy_tasks, OTHER_MEAN), task)
    assert unsure.provenance == "unsure" and not unsure.passed and "cannot tell" in " ".join(unsure.reasons)
    broken = mock.verify(_ws(toy_tasks, ("return total", "return (total")), task)
    assert broken.provenance == "measured" and "does not compile" in broken.reasons[0]


def test_an_unsure_submission_ends_the_episode_unscored(toy_tasks: TaskRegistry) -> None:
    env = TriageEnvironment(toy_tasks, MockSandbox())
    env.reset(task="toy_mean")
    env.step(parse_action({"action_type": "edit_file", "filename": "stats.py", "old_str": OTHER_MEAN[0],
                           "new_str": OTHER_MEAN[1]}))
    obs = env.step(parse_action({"action_type": "submit_fix", "explanation": "the divisor was off by one"}))
    assert obs.done and obs.system_status == "fix_unsure" and obs.run_status == "unknown"
    assert obs.reward == 0.0 and obs.score is None and "UNSURE" in obs.terminal_output
    st = env.state
    assert st.done and st.submitted and st.score is None and st.verdict is not None
    assert st.verdict.provenance == "unsure"


def test_unsure_is_counted_apart_and_never_rewarded() -> None:
    assert "unsure" in EXCLUDED_STATUSES and "unsure" in FINISHED_STATUSES  # not scored, not retried
    sure = SimpleNamespace(reward=0.7, unsure=False)
    unsure = SimpleNamespace(reward=0.0, unsure=True)
    envs = [object.__new__(TriageToolEnv) for _ in range(2)]
    for env, ns in zip(envs, (sure, unsure), strict=True):
        env.__dict__.update(vars(ns))
    assert reward_fn(envs) == [0.7, None]


def test_the_toy_classifier_labels_every_known_state_and_doubts_the_rest(toy_tasks: TaskRegistry) -> None:
    """The docs' smallest example holds to the rule every task's classifier is tested on."""
    from sandbox_env.analysis import UNSURE
    from sandbox_env.suite.traces import task_states

    task = toy_tasks.get("toy_mean")
    assert [(s, w) for s, w, files in task_states(task) if task.classifier(files) != w] == []
    base = task.repo_files()
    other = {**base, "stats.py": base["stats.py"].replace("return total / (len(values) - 1)",
                                                          "return total * (1 / len(values))")}
    assert task.classifier(other) == UNSURE
