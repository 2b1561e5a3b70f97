"""TriageEnvironment: episode flow, budget, rewards and the seed's exploits (toy task, mock)."""

from __future__ import annotations

import asyncio

import pytest

from sandbox_env.actions import parse_action
from sandbox_env.environment import EpisodeDone, InvalidAction, NotReset, TriageEnvironment
from sandbox_env.models import Limits, Observation, Outcome, RunResult, Verdict
from sandbox_env.sandbox.mock import MockSandbox
from sandbox_env.suite.oracle import oracle_actions
from sandbox_env.suite.tasks import TaskRegistry


def act(env: TriageEnvironment, raw: dict) -> Observation:
    """One raw action, validated the way every face validates it, then applied."""
    return env.step(parse_action(raw))


@pytest.fixture
def env(toy_tasks: TaskRegistry) -> TriageEnvironment:
    return TriageEnvironment(toy_tasks, MockSandbox())


def test_reset_observation(env: TriageEnvironment) -> None:
    obs = env.reset(task="toy_mean", episode_id="ep1", seed=3)
    assert obs.episode_id == "ep1" and obs.mode == "mock" and obs.step_number == 0
    assert set(obs.current_files) == {"report.py", "stats.py"} and obs.instructions
    assert obs.budget_remaining == obs.max_steps and not obs.done
    assert env.state.seed == 3


def test_step_before_reset_and_after_done(env: TriageEnvironment) -> None:
    with pytest.raises(NotReset):
        act(env, {"action_type": "view_git_diff"})
    env.reset(task="toy_mean")
    act(env, {"action_type": "submit_fix", "explanation": "nothing"})
    with pytest.raises(EpisodeDone):
        act(env, {"action_type": "view_git_diff"})


def test_invalid_actions_are_explained(env: TriageEnvironment) -> None:
    env.reset(task="toy_mean")
    with pytest.raises(InvalidAction, match="no action_type"):
        act(env, {"filename": "x"})
    with pytest.raises(InvalidAction, match="read_file"):
        act(env, {"action_type": "rm_rf"})
    with pytest.raises(InvalidAction, match="filename"):
        act(env, {"action_type": "read_file"})


def test_oracle_episode_scores_high(env: TriageEnvironment, toy_tasks: TaskRegistry) -> None:
    env.reset(task="toy_mean")
    for a in oracle_actions(toy_tasks.get("toy_mean")):
        obs = act(env, a)
    assert obs.done and obs.verdict and obs.verdict.passed
    assert obs.score is not None and obs.score >= 0.9
    assert env.state.score == obs.score and obs.system_status == "fix_verified"
    assert env.state.cumulative_reward > obs.score  # shaping + terminal


def test_run_output_reward_and_hints(env: TriageEnvironment) -> None:
    env.reset(task="toy_mean")
    obs = act(env, {"action_type": "execute_bash", "command": "python report.py"})
    assert obs.run_status == "failing" and obs.reward > 0 and "sanity check failed" in obs.terminal_output
    assert obs.system_status == "training_failed" and obs.hint is None
    obs = act(env, {"action_type": "execute_bash", "command": "python3 report.py"})
    assert obs.reward == 0  # the failure was already reproduced once
    assert obs.hint is not None


def test_repeat_penalty_only_on_unchanged_workspace(env: TriageEnvironment) -> None:
    env.reset(task="toy_mean")
    act(env, {"action_type": "view_git_diff"})
    obs = act(env, {"action_type": "view_git_diff"})
    assert obs.reward < 0 and "identical action" in obs.terminal_output
    act(env, {"action_type": "edit_file", "filename": "stats.py", "old_str": "total = 0.0",
              "new_str": "total = 0.0 + 0"})
    assert act(env, {"action_type": "view_git_diff"}).reward == 0


def test_failed_edit_earns_nothing_and_syntax_break_costs(env: TriageEnvironment) -> None:
    env.reset(task="toy_mean")
    obs = act(env, {"action_type": "edit_file", "filename": "stats.py", "old_str": "nope", "new_str": "x"})
    assert obs.reward == 0 and obs.last_action_error
    obs = act(env, {"action_type": "edit_file", "filename": "stats.py", "old_str": "total = 0.0",
                    "new_str": "total = (0.0"})
    assert obs.reward < 0 and "no longer compiles" in obs.terminal_output


def test_budget_exhaustion_scores_unverified(env: TriageEnvironment) -> None:
    obs = env.reset(task="toy_mean")
    for i in range(obs.max_steps):
        obs = act(env, {"action_type": "read_file", "filename": ["stats.py", "report.py"][i % 2]})
    assert obs.done and obs.system_status == "budget_exhausted"
    assert obs.score == 0.001 and env.state.verdict is None


@pytest.mark.parametrize("exploit", [
    [{"action_type": "edit_file", "filename": "stats.py", "old_str": "total = 0.0",
      "new_str": "total = 0.0  # off-by-one fixed: divide by len(values) not len(values) - 1"}],
    [{"action_type": "edit_file", "filename": "stats.py", "old_str": "", "new_str": "x"}],
    [{"action_type": "read_file", "filename": "stats.py"}] * 7,
    [],
])
def test_seed_exploits_score_low(env: TriageEnvironment, exploit: list[dict]) -> None:
    env.reset(task="toy_mean")
    for a in exploit:
        act(env, a)
    stuffed = "off-by-one len(values) count divisor " * 20
    obs = act(env, {"action_type": "submit_fix", "explanation": stuffed})
    assert obs.done and not obs.verdict.passed and obs.score < 0.2


class _BrokenSandbox(MockSandbox):
    def run(self, workspace, command, limits: Limits, task):  # type: ignore[no-untyped-def]
        return RunResult(command=command, output="engine gone", exit_code=None,
                         outcome=Outcome.infra_error, duration_s=0)

    def verify(self, workspace, task):  # type: ignore[no-untyped-def]
        return Verdict(passed=False, outcome=Outcome.infra_error, reasons=["engine gone"])


def test_infra_errors_are_not_scored(toy_tasks: TaskRegistry) -> None:
    env = TriageEnvironment(toy_tasks, _BrokenSandbox())
    env.reset(task="toy_mean")
    obs = act(env, {"action_type": "execute_bash", "command": "python report.py"})
    assert obs.step_number == 0 and obs.system_status == "infra_error" and obs.reward == 0
    obs = act(env, {"action_type": "submit_fix", "explanation": "x"})
    assert not obs.done and obs.score is None and "not a result about your code" in obs.terminal_output
    # retrying what the infrastructure failed to do is not a repetition: no penalty, no note
    obs = act(env, {"action_type": "submit_fix", "explanation": "x"})
    assert obs.reward == 0 and "identical action" not in obs.terminal_output
    assert "did not use a step" in obs.terminal_output and obs.step_number == 0
    obs = act(env, {"action_type": "submit_fix", "explanation": "x"})  # the fourth failure is paid for
    assert obs.step_number == 1 and "it used a step (only the first 3" in obs.terminal_output
    assert obs.reward == 0 and "identical action" not in obs.terminal_output


class _CountingSandbox(MockSandbox):
    closed = 0

    def close(self) -> None:
        self.closed += 1


def test_closing_an_episode_never_closes_its_sandbox(toy_tasks: TaskRegistry) -> None:
    from sandbox_env.server.sessions import SessionManager

    shared = _CountingSandbox()
    sessions = SessionManager(lambda: TriageEnvironment(toy_tasks, shared), 4, 60)
    a, b = sessions.open("a"), sessions.open("b")
    a.env.reset(task="toy_mean")
    b.env.reset(task="toy_mean")
    assert asyncio.run(sessions.close("a"))
    assert len(sessions) == 1 and a.env._state is None and shared.closed == 0
    assert act(b.env, {"action_type": "view_git_diff"}).step_number == 1
    own = _CountingSandbox()
    TriageEnvironment(toy_tasks, own).close()
    assert own.closed == 0  # the environment borrows its sandbox: its maker closes it


class _ScriptedSandbox(MockSandbox):
    """Runs pass or fail as told (a run may also leave a binary file or edit a file); a
    verification records what the episode's own last run proved about the submitted files."""

    def __init__(self) -> None:
        super().__init__()
        self.outcome, self.blob, self.touch, self.seen = Outcome.passed, False, False, []

    def run(self, workspace, command, limits: Limits, task):  # type: ignore[no-untyped-def]
        if self.blob:
            workspace.blobs["ckpt.pt"] = b"\0"
        if self.touch:
            workspace.files["report.py"] += "\n# touched\n"
        return RunResult(command=command, output="ok", exit_code=0 if self.outcome == Outcome.passed else 1,
                         outcome=self.outcome, duration_s=4.5)

    def verify(self, workspace, task):  # type: ignore[no-untyped-def]
        self.seen.append(workspace.ran_clean())
        return Verdict(passed=True, outcome=Outcome.passed)


@pytest.mark.parametrize("case", ["clean", "edited_after", "failed", "other_command", "blob_before",
                                  "run_edits"])
def test_a_verification_is_told_of_the_episodes_clean_run_on_exactly_its_files(
        toy_tasks: TaskRegistry, case: str) -> None:
    """The episode's last run of the task's command stands for the check's run from the workspace
    only when it exited 0 on exactly the submitted files, none of them binary leftovers, and left
    them unchanged; anything else and the check runs it itself."""
    box = _ScriptedSandbox()
    env = TriageEnvironment(toy_tasks, box)
    env.reset(task="toy_mean")
    command = "python report.py"
    if case == "failed":
        box.outcome = Outcome.failed
    if case == "other_command":
        command = "python report.py --verbose"
    if case == "blob_before":
        box.blob = True
        act(env, {"action_type": "execute_bash", "command": "ls"})  # leaves a binary file
        box.blob = False
    box.touch = case == "run_edits"
    act(env, {"action_type": "execute_bash", "command": command})
    if case == "edited_after":
        act(env, {"action_type": "edit_file", "filename": "notes.py", "old_str": "", "new_str": "x = 1\n"})
    act(env, {"action_type": "submit_fix", "explanation": "x"})
    assert box.seen == [4.5 if case == "clean" else None]
