"""`sandbox-env eval`: agents over tasks x seeds in parallel (mock mode and docker), resumable
records with provenance, isolation of failing episodes, infra exclusion, replay, the LLM agent."""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from openai import OpenAI

from sandbox_env.agent import AgentConfig
from sandbox_env.eval import (
    EvalConfig,
    EvalConfigError,
    EvalResult,
    LLMAgent,
    OracleAgent,
    RandomAgent,
    ReplayAgent,
    StepAgent,
    make_agent,
    parse_seeds,
    read_records,
    run_eval,
)
from sandbox_env.eval.policies import Policy
from sandbox_env.eval.records import (
    EPISODES_FILE,
    RUNS_FILE,
    SUMMARY_FILE,
    EpisodeRecord,
    cap_text,
    latest,
    read_runs,
    task_version,
)
from sandbox_env.eval.stats import mean_ci, t_quantile, wilson, z_quantile
from sandbox_env.eval.summary import Summary
from sandbox_env.models import Limits, Observation, Outcome, RunResult, Verdict
from sandbox_env.rubrics import ConceptJudge
from sandbox_env.sandbox import MockSandbox
from sandbox_env.suite.oracle import oracle_actions
from sandbox_env.suite.tasks import TaskRegistry, TaskSpec
from sandbox_env.workspace import Workspace

from .conftest import ROOT
from .test_agent import ScriptedLLM


def QUIET(line: str) -> None:
    return None


def run(out: Path, registry: TaskRegistry, agent: Any, *, sandbox: Any = None, emit: Any = QUIET,
        **kw: Any) -> EvalResult:
    """An eval in mock mode (unless told), quiet, with the heuristic judge."""
    kw.setdefault("mode", "mock")
    kw.setdefault("progress", False)
    cfg = EvalConfig(agent=agent.label, out=out, **kw)
    return run_eval(cfg, registry, agent, sandbox=sandbox, judge=ConceptJudge(), emit=emit)


def records(out: Path) -> list[EpisodeRecord]:
    return read_records(out / EPISODES_FILE).records


def summary(out: Path) -> Summary:
    return Summary.model_validate_json((out / SUMMARY_FILE).read_text())


# --------------------------------------------------------------------------- statistics
def test_stats_against_known_values() -> None:
    assert z_quantile(0.975) == pytest.approx(1.959963985, abs=1e-9)
    for df, t in [(1, 12.70620474), (2, 4.30265273), (9, 2.26215716), (29, 2.04522964), (1000, 1.96233908)]:
        assert t_quantile(0.975, df) == pytest.approx(t, abs=1e-7)
    assert t_quantile(0.025, 9) == pytest.approx(-2.26215716, abs=1e-7)
    # Wilson 95%: 0/10 -> [0, 0.2775], 5/10 -> [0.2366, 0.7634], 10/10 -> [0.7225, 1];
    # 81/263 -> [0.2553, 0.3662] (Newcombe 1998, Stat. Med. 17:857, Table I)
    for k, n, lo, hi in [(0, 10, 0.0, 0.2775), (5, 10, 0.2366, 0.7634), (10, 10, 0.7225, 1.0),
                         (81, 263, 0.2553, 0.3662)]:
        ci = wilson(k, n)
        assert (ci.lo, ci.hi) == (pytest.approx(lo, abs=6e-5), pytest.approx(hi, abs=6e-5))
    assert wilson(0, 0).rate is None
    with pytest.raises(ValueError):
        wilson(3, 2)
    # t interval of 1..5: mean 3, s = 1.5811, half = 2.7764 * 1.5811 / sqrt(5) = 1.9632
    ci = mean_ci([1, 2, 3, 4, 5], bounds=(-math.inf, math.inf))
    assert ci.mean == 3.0
    assert (ci.lo, ci.hi) == (pytest.approx(1.03676, abs=1e-5), pytest.approx(4.96324, abs=1e-5))
    clipped = mean_ci([0.9, 1.0, 0.2])
    assert clipped.hi == 1.0 and clipped.lo is not None and clipped.lo >= 0.0
    assert mean_ci([0.5]).lo is None and mean_ci([]).mean is None
    assert mean_ci([0.7, 0.7, 0.7]).lo == pytest.approx(0.7)


def test_seeds_and_text_caps() -> None:
    assert parse_seeds("0,1, 2", None) == [0, 1, 2]
    assert parse_seeds(None, 3) == [0, 1, 2]
    assert parse_seeds(None, None) is None
    for bad in (("0,x", None), ("1,1", None), ("0", 2), (None, 0)):
        with pytest.raises(EvalConfigError):
            parse_seeds(*bad)
    text = "a" * 3000 + "MIDDLE" + "z" * 3000
    capped = cap_text(text, 4000)
    assert capped.startswith("a" * 2000) and capped.endswith("z" * 2000) and "MIDDLE" not in capped
    assert "chars omitted" in capped and cap_text("short", 4000) == "short"
    with pytest.raises(EvalConfigError, match="unknown agent"):
        make_agent("genius")


# --------------------------------------------------------------------------- CI acceptance
@pytest.fixture(scope="module")
def acceptance(tmp_path_factory: pytest.TempPathFactory, real_tasks: TaskRegistry) -> Path:
    """oracle and random over ALL real tasks, 3 seeds each, concurrency 4, mock mode, one dir."""
    out = tmp_path_factory.mktemp("acceptance")
    for agent in (OracleAgent(), RandomAgent()):
        res = run(out, real_tasks, agent, seeds=[0, 1, 2], concurrency=4)
        assert res.ran == 3 * len(real_tasks) and res.skipped == 0 and not res.interrupted
        assert res.statuses["ok"] == res.ran, res.statuses
    return out


def test_acceptance_oracle_solves_everything_random_almost_nothing(acceptance: Path,
                                                                   real_tasks: TaskRegistry) -> None:
    s = summary(acceptance)
    oracle, rnd = s.agents["oracle"], s.agents["random"]
    assert set(oracle.per_task) == set(real_tasks.ids()) == set(rnd.per_task)
    assert oracle.overall.success.rate == 1.0 and oracle.overall.n_scored == 3 * len(real_tasks)
    assert all(g.success.rate == 1.0 and g.outcomes == {"verified": 3} for g in oracle.per_task.values())
    assert oracle.overall.score.mean is not None and oracle.overall.score.mean > 0.9
    assert rnd.overall.success.rate is not None and rnd.overall.success.rate < 0.10
    assert rnd.overall.score.mean is not None and rnd.overall.score.mean < 0.2
    # the statistics are the documented ones, computed over the scored episodes
    o = oracle.overall
    ref = wilson(o.success.k, o.success.n)
    assert (o.success.lo, o.success.hi) == (ref.lo, ref.hi)
    assert o.score.lo is not None and o.score.lo <= o.score.mean <= (o.score.hi or 0)
    assert set(oracle.per_difficulty) <= {"easy", "medium", "hard"} and oracle.per_difficulty
    # the oracle plays the same script on every seed: the median is over its scripts' lengths
    want = statistics.median(len(oracle_actions(real_tasks.get(t))) for t in real_tasks.ids())
    assert o.steps_to_solve_median == want and o.phases.total_s is not None
    assert "Wilson" in s.methods["success_rate_ci"] and "Student t" in s.methods["mean_score_ci"]
    assert s.n_records == 6 * len(real_tasks) and s.n_superseded == 0


def test_records_carry_trajectory_timings_and_provenance(acceptance: Path, real_tasks: TaskRegistry) -> None:
    recs = records(acceptance)
    assert Counter((r.agent, r.task) for r in recs) == {(a, t): 3 for a in ("oracle", "random")
                                                        for t in real_tasks.ids()}
    for r in recs:
        task = real_tasks.get(r.task)
        assert r.task_version == task_version(task) and r.difficulty == task.difficulty
        assert r.mode == "mock" and r.schema_version == 1 and r.status == "ok"
        assert r.steps == sum(s.refused is None for s in r.trajectory)
        assert len(r.rewards) == r.steps and r.initial_observation is not None
        assert r.initial_observation.files and set(r.initial_observation.files) == set(task.repo_files())
        assert all(isinstance(v, int) for v in r.initial_observation.files.values())  # sizes, no contents
        assert all(len(s.observation.terminal_output) <= 4100 for s in r.trajectory if s.observation)
        t = r.timings
        assert t.total_s >= t.env_s >= t.verification_s >= 0 and t.agent_s >= 0
        assert t.verification_s == pytest.approx(t.by_action.get("submit_fix", 0.0))
        p = r.provenance
        assert p.package_version and p.python and p.host and p.judge == "ConceptJudge"
        assert p.traces and p.torch == "2.13.0" and p.torch_source == "recorded traces"
        assert r.outcome in ("verified", "rejected", "budget_exhausted")
        if r.agent == "oracle":
            assert r.outcome == "verified" and r.success and r.verdict and r.verdict.passed
            assert r.verdict_outcome == "passed" and r.score and r.score > 0.9
            assert [s.action_type for s in r.trajectory][-1] == "submit_fix"
            assert r.trajectory[-1].action["explanation"] == task.reference_explanation
        else:
            assert not r.success and r.score is not None and r.score < 0.2
    # random: only valid actions of every kind, reproducible from the seed
    kinds = Counter(s.action_type for r in recs if r.agent == "random" for s in r.trajectory)
    assert set(kinds) == {"read_file", "edit_file", "execute_bash", "view_git_diff", "submit_fix"}
    assert not [s for r in recs for s in r.trajectory if s.refused]


def test_random_agent_is_reproducible(real_tasks: TaskRegistry, tmp_path: Path) -> None:
    a = run(tmp_path / "a", real_tasks, RandomAgent(), seeds=[7], tasks=["oom_graph_leak"])
    b = run(tmp_path / "b", real_tasks, RandomAgent(), seeds=[7], tasks=["oom_graph_leak"])
    assert a.ran == b.ran == 1
    ra, rb = records(tmp_path / "a")[0], records(tmp_path / "b")[0]
    assert [s.action for s in ra.trajectory] == [s.action for s in rb.trajectory]


# --------------------------------------------------------------------------- replay
def test_replay_reproduces_the_oracle_and_random_runs(acceptance: Path, real_tasks: TaskRegistry,
                                                      tmp_path: Path) -> None:
    for source in ("oracle", "random"):
        agent = make_agent(f"replay:{acceptance}", replay_agent=source)
        assert isinstance(agent, ReplayAgent) and agent.label == f"replay:{source}"
        res = run(tmp_path, real_tasks, agent, concurrency=4)  # tasks and seeds: the recorded ones
        assert res.ran == 3 * len(real_tasks) and res.replay_mismatches == 0
        src = {(r.task, r.seed): r for r in records(acceptance) if r.agent == source}
        for r in records(tmp_path):
            if r.agent != f"replay:{source}":
                continue
            assert r.replay is not None and r.replay.matches, r.replay
            s = src[(r.task, r.seed)]
            assert [x.action for x in r.trajectory] == [x.action for x in s.trajectory]
            assert (r.verdict_outcome, r.score, r.rewards) == (s.verdict_outcome, s.score, s.rewards)
    assert summary(tmp_path).agents["replay:oracle"].replay.mismatches == 0  # type: ignore[union-attr]


def test_replay_detects_a_changed_environment(acceptance: Path, real_tasks: TaskRegistry,
                                              tmp_path: Path) -> None:
    """A recording whose rewards and verdict no longer match what the environment answers."""
    src = tmp_path / "tampered.jsonl"
    lines = []
    for r in records(acceptance):
        if r.agent == "oracle" and r.task == "oom_graph_leak" and r.seed == 0:
            r.trajectory[0].reward += 0.5
            r.verdict_outcome, r.score = "failed", 0.05
            lines.append(r.model_dump_json())
    src.write_text("\n".join(lines) + "\n")
    res = run(tmp_path / "out", real_tasks, ReplayAgent(src))
    assert res.replay_mismatches == 1
    check = records(tmp_path / "out")[0].replay
    assert check is not None and not check.matches
    assert any("reward" in d for d in check.differences) and any("score" in d for d in check.differences)
    with pytest.raises(EvalConfigError, match="several agents"):
        ReplayAgent(acceptance)
    with pytest.raises(EvalConfigError, match="no recorded trajectory"):
        run(tmp_path / "x", real_tasks, ReplayAgent(src), seeds=[5])


# --------------------------------------------------------------------------- resume
def test_resume_skips_finished_episodes_and_tolerates_a_truncated_line(real_tasks: TaskRegistry,
                                                                      tmp_path: Path) -> None:
    n = len(real_tasks)
    first = run(tmp_path, real_tasks, OracleAgent(), seeds=[0, 1], concurrency=3, progress=True)
    assert first.ran == 2 * n
    with (tmp_path / EPISODES_FILE).open("a") as f:  # a crash in the middle of a write
        f.write('{"schema_version": 1, "record_id": "abc", "agent": "ora')
    lines: list[str] = []
    second = run(tmp_path, real_tasks, OracleAgent(), seeds=[0, 1, 2], concurrency=3, emit=lines.append)
    assert (second.skipped, second.ran) == (2 * n, n)  # one new episode per task
    assert any("truncated last line" in x for x in lines)
    recs = records(tmp_path)
    assert len(recs) == 3 * n and len(latest(recs)) == 3 * n
    assert Counter(r.seed for r in recs) == {0: n, 1: n, 2: n}
    text = (tmp_path / EPISODES_FILE).read_text()
    assert text.endswith("\n") and '"ora\n' not in text and all(json.loads(x) for x in text.splitlines())
    third = run(tmp_path, real_tasks, OracleAgent(), seeds=[0, 1, 2])
    assert third.ran == 0 and third.skipped == 3 * n
    runs = read_runs(tmp_path / RUNS_FILE)
    assert [r.ran for r in runs] == [2 * n, n, 0] and summary(tmp_path).agents["oracle"].overall.n == 3 * n


class Interrupting(StepAgent):
    """Behaves like the oracle but raises KeyboardInterrupt (Ctrl-C) in its third episode."""

    label = "oracle"

    def __init__(self) -> None:
        self.calls = 0

    def policy(self, task: TaskSpec, seed: int) -> Policy:
        self.calls += 1
        if self.calls == 3:
            raise KeyboardInterrupt
        return OracleAgent().policy(task, seed)


def test_ctrl_c_keeps_finished_episodes_writes_the_summary_and_resumes(real_tasks: TaskRegistry,
                                                                       tmp_path: Path) -> None:
    res = run(tmp_path, real_tasks, Interrupting(), seeds=[0, 1], concurrency=1)
    assert res.interrupted and res.ran == 2
    assert summary(tmp_path).interrupted and len(records(tmp_path)) == 2
    again = run(tmp_path, real_tasks, OracleAgent(), seeds=[0, 1], concurrency=2)
    assert (again.skipped, again.ran, again.interrupted) == (2, 2 * len(real_tasks) - 2, False)
    assert summary(tmp_path).agents["oracle"].overall.success.rate == 1.0


def test_ctrl_c_counts_the_episodes_that_finished_with_it(real_tasks: TaskRegistry, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The scheduler wakes late (a loaded machine): episodes 1 and 2 finished and episode 3
    raised Ctrl-C before it looked, and the one worker went on to the queued episodes."""
    import sandbox_env.eval.runner as runner_mod

    real_wait = runner_mod.wait

    def late(*a: Any, **kw: Any) -> Any:
        time.sleep(0.5)
        return real_wait(*a, **kw)

    monkeypatch.setattr(runner_mod, "wait", late)
    res = run(tmp_path, real_tasks, Interrupting(), seeds=[0, 1], concurrency=1)
    assert res.interrupted and res.ran == 2 and len(records(tmp_path)) == 2


# --------------------------------------------------------------------------- failures
class CrashesOn(StepAgent):
    """The oracle, except that it raises in the middle of one task's episodes."""

    label = "crashy"

    def __init__(self, task_id: str) -> None:
        self.task_id = task_id

    def policy(self, task: TaskSpec, seed: int) -> Policy:
        actions = OracleAgent().policy(task, seed)
        crash_on = self.task_id

        class P:
            n = 0

            def act(self, obs: Observation, refused: str | None) -> dict[str, Any] | None:
                P.n += 1
                if task.id == crash_on and P.n == 3:
                    raise ZeroDivisionError("the agent's own bug")
                return actions.act(obs, refused)

        return P()


def test_a_failing_episode_is_isolated(real_tasks: TaskRegistry, tmp_path: Path) -> None:
    res = run(tmp_path, real_tasks, CrashesOn("ddp_gradient_hang"), seeds=[0, 1], concurrency=4)
    assert res.ran == 2 * len(real_tasks) and res.statuses["agent_error"] == 2
    for r in records(tmp_path):
        if r.task == "ddp_gradient_hang":
            assert (r.status, r.outcome, r.success, r.score) == ("agent_error", "error", False, 0.001)
            assert r.error and "ZeroDivisionError: the agent's own bug" in r.error and r.steps == 2
        else:
            assert (r.status, r.outcome) == ("ok", "verified")
    s = summary(tmp_path).agents["crashy"]
    assert s.overall.n_agent_error == 2 and s.per_task["ddp_gradient_hang"].n_agent_error == 2
    assert s.per_task["ddp_gradient_hang"].success.rate == 0.0  # scored, as failures
    assert s.overall.success.k == 2 * (len(real_tasks) - 1) and s.overall.n_scored == 2 * len(real_tasks)
    # agent errors are finished episodes: not retried on resume
    assert run(tmp_path, real_tasks, CrashesOn("ddp_gradient_hang"), seeds=[0, 1]).ran == 0


def test_a_bug_of_the_harness_is_recorded_and_the_run_goes_on(real_tasks: TaskRegistry, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from sandbox_env.eval.episode import EpisodeRunner as EvalRunner

    original = EvalRunner._record

    def broken(self: EvalRunner, key: Any, **kw: Any) -> EpisodeRecord:
        if key.task == "compile_graph_break":
            raise KeyError("harness bug")
        return original(self, key, **kw)

    monkeypatch.setattr(EvalRunner, "_record", broken)
    res = run(tmp_path, real_tasks, OracleAgent(), seeds=[0], concurrency=2)
    assert res.statuses == {"ok": len(real_tasks) - 1, "agent_error": 0, "env_error": 1, "infra_error": 0}
    bad = next(r for r in records(tmp_path) if r.task == "compile_graph_break")
    assert bad.status == "env_error" and bad.error and "harness bug" in bad.error and bad.score is None


class FlakySandbox(MockSandbox):
    """Mock mode whose verification of one task is an infrastructure failure (or whose runs
    raise): isolates the runner's classification, everything else is the real mock."""

    def __init__(self, task_id: str, how: str) -> None:
        super().__init__()
        self.task_id, self.how = task_id, how

    def run(self, workspace: Workspace, command: str, limits: Limits, task: TaskSpec) -> RunResult:
        if task.id == self.task_id and self.how == "run-raises-env":
            raise RuntimeError("a bug in the sandbox")
        if task.id == self.task_id and self.how == "run-raises-infra":
            raise ConnectionError("engine went away")
        return super().run(workspace, command, limits, task)

    def verify(self, workspace: Workspace, task: TaskSpec) -> Verdict:
        if task.id == self.task_id and self.how == "verify-infra":
            return Verdict(passed=False, outcome=Outcome.infra_error, reasons=["checker container died"])
        return super().verify(workspace, task)


@pytest.mark.parametrize(("how", "status"), [("verify-infra", "infra_error"),
                                              ("run-raises-infra", "infra_error"),
                                              ("run-raises-env", "env_error")])
def test_infra_and_env_errors_are_recorded_excluded_and_retried(real_tasks: TaskRegistry, tmp_path: Path,
                                                                how: str, status: str) -> None:
    bad = "fsdp_collective_deadlock"
    res = run(tmp_path, real_tasks, OracleAgent(), seeds=[0, 1], concurrency=4,
              sandbox=FlakySandbox(bad, how), infra_retries=0)
    assert res.statuses[status] == 2 and res.statuses["ok"] == 2 * (len(real_tasks) - 1)
    for r in records(tmp_path):
        if r.task == bad:
            assert r.status == status and r.score is None and not r.success and r.error
            assert r.outcome == ("infra_error" if status == "infra_error" else "error")
    o = summary(tmp_path).agents["oracle"].overall
    excluded = o.n_infra_excluded if status == "infra_error" else o.n_env_error_excluded
    assert excluded == 2 and o.n == 2 * len(real_tasks) and o.n_scored == 2 * (len(real_tasks) - 1)
    assert o.success.rate == 1.0  # excluded from the score, not counted as failures
    assert o.outcomes[("infra_error" if status == "infra_error" else "error")] == 2
    # on resume, only the excluded episodes are retried; the new records supersede them
    again = run(tmp_path, real_tasks, OracleAgent(), seeds=[0, 1])
    assert (again.ran, again.statuses["ok"]) == (2, 2)
    s = summary(tmp_path)
    assert s.n_superseded == 2 and s.agents["oracle"].overall.n_scored == 2 * len(real_tasks)


class FailsTwice(FlakySandbox):
    """The first two verifications of one task are infrastructure failures, the rest real."""

    def __init__(self, task_id: str) -> None:
        super().__init__(task_id, "verify-infra")
        self.failures, self.lock = 0, threading.Lock()

    def verify(self, workspace: Workspace, task: TaskSpec) -> Verdict:
        with self.lock:
            fail = task.id == self.task_id and self.failures < 2
            self.failures += fail
        if fail:
            return Verdict(passed=False, outcome=Outcome.infra_error, reasons=["checker container died"])
        return MockSandbox.verify(self, workspace, task)


def test_infra_errors_are_played_again_within_the_invocation(real_tasks: TaskRegistry,
                                                            tmp_path: Path) -> None:
    bad = "ddp_gradient_hang"
    res = run(tmp_path, real_tasks, OracleAgent(), seeds=[0, 1], concurrency=2, sandbox=FailsTwice(bad))
    assert res.retried == 2 and res.statuses["infra_error"] == 0
    assert res.statuses["ok"] == 2 * len(real_tasks)
    recs = records(tmp_path)
    assert len(recs) == 2 * len(real_tasks) + 2
    assert sorted(r.status for r in recs if r.task == bad) == ["infra_error", "infra_error", "ok", "ok"]
    s = summary(tmp_path)
    assert s.n_superseded == 2 and s.agents["oracle"].overall.n_scored == 2 * len(real_tasks)
    assert s.agents["oracle"].overall.success.rate == 1.0
    # a permanent failure is played 1 + infra_retries times, then left for a rerun
    again = run(tmp_path / "b", real_tasks, OracleAgent(), seeds=[0],
                sandbox=FlakySandbox(bad, "verify-infra"), infra_retries=2)
    assert again.retried == 2 and again.statuses["infra_error"] == 1
    assert [r.status for r in records(tmp_path / "b") if r.task == bad] == ["infra_error"] * 3


# --------------------------------------------------------------------------- the LLM agent
def test_llm_agent_in_process_via_a_scripted_model(toy_tasks: TaskRegistry, tmp_path: Path) -> None:
    """The baseline agent's own loop (run_episode) drives the in-process environment."""
    task = toy_tasks.get("toy_mean")
    llm = ScriptedLLM().start()
    try:
        actions = oracle_actions(task)
        replies: list[str | int] = [
            f"I will reproduce the failure first.\n```json\n{json.dumps(actions[0])}\n```",
            "not json at all",  # unusable: one corrective retry, then the next action
            *[json.dumps(a) for a in actions[1:]]]
        llm.load(replies)  # seed 0 plays these; seed 1 finds the script exhausted (HTTP 400)
        cfg = AgentConfig(api_base_url=llm.url, model="scripted-model", api_key="k", retry_backoff_s=0.01)
        oai = OpenAI(base_url=llm.url, api_key="k", max_retries=0, timeout=30)
        res = run(tmp_path, toy_tasks, LLMAgent(cfg, llm=oai), seeds=[0, 1], concurrency=1)
    finally:
        llm.stop()
    assert res.ran == 2
    by_seed = {r.seed: r for r in records(tmp_path)}
    ok, broken = by_seed[0], by_seed[1]
    assert ok.agent == "llm:scripted-model" and ok.model == "scripted-model"
    assert (ok.status, ok.outcome, ok.success) == ("ok", "verified", True)
    assert [s.action_type for s in ok.trajectory] == [a["action_type"] for a in oracle_actions(task)]
    assert ok.agent_info["llm_calls"] == len(oracle_actions(task)) + 1  # one corrective retry
    assert ok.agent_info["api_base_url"] == llm.url and ok.timings.agent_s > 0
    assert (broken.status, broken.outcome, broken.score) == ("agent_error", "error", 0.001)
    assert broken.error and "HTTP 400" in broken.error
    with pytest.raises(EvalConfigError, match="no API key"):
        make_agent("llm", environ={})


# --------------------------------------------------------------------------- the command line
def cli(*args: str, root: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "SANDBOX_ENV_JUDGE_MODEL"}
    return subprocess.run([sys.executable, "-m", "sandbox_env.cli", "--task-root", str(root), *args],
                          capture_output=True, text=True, timeout=120, cwd=ROOT, check=False, env=env)


def test_cli_eval_then_report_end_to_end(toy_root: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    p = cli("eval", "--agent", "oracle", "--episodes", "2", "--mode", "mock", "--concurrency", "2",
            "--out", str(out), root=toy_root)
    assert p.returncode == 0, p.stderr
    lines = [x for x in p.stdout.splitlines() if x.startswith("[eval] ") and "/2 oracle toy_mean" in x]
    assert len(lines) == 2 and all("outcome=verified" in x for x in lines)  # no TTY: one line each
    assert "[summary] oracle: episodes=2 scored=2 success=100.0%" in p.stdout
    assert (out / EPISODES_FILE).exists() and (out / SUMMARY_FILE).exists()
    p = cli("eval", "--agent", f"replay:{out}", "--mode", "mock", "--out", str(out), root=toy_root)
    assert p.returncode == 0 and "replay: 2 checked, 0 mismatched" in p.stdout, p.stdout + p.stderr
    p = cli("report", str(out), root=toy_root)
    assert p.returncode == 0, p.stderr
    assert (out / "report.html").stat().st_size > 10_000 and (out / "report.md").exists()
    assert len(list((out / "trajectories").glob("*.html"))) == 4
    p = cli("eval", "--agent", "oracle", "--seeds", "0", "--episodes", "2", "--out", str(out), root=toy_root)
    assert p.returncode == 2 and "not both" in p.stderr
    p = cli("eval", "--agent", "oracle", "--tasks", "nope", "--mode", "mock", "--out", str(out),
            root=toy_root)
    assert p.returncode == 2 and "unknown task" in p.stderr
    p = cli("report", str(tmp_path / "empty"), root=toy_root)
    assert p.returncode == 2 and "no episode records" in p.stderr


# --------------------------------------------------------------------------- docker mode
@pytest.mark.docker
def test_docker_eval_of_the_toy_task_records_the_image(toy_tasks: TaskRegistry, tmp_path: Path) -> None:
    docker = pytest.importorskip("docker")
    from sandbox_env.sandbox.docker import RUNNER_IMAGE, labelled

    try:
        client = docker.from_env(timeout=5)
        image = client.images.get(RUNNER_IMAGE)
    except Exception as exc:
        pytest.skip(f"Docker engine or runner image not available: {exc}")
    owner = "pytest-eval"
    res = run(tmp_path, toy_tasks, OracleAgent(), mode="docker", seeds=[0, 1], concurrency=2, owner=owner)
    assert res.mode == "docker" and res.statuses["ok"] == 2
    for r in records(tmp_path):
        assert (r.mode, r.outcome) == ("docker", "verified")
        assert r.provenance.image == image.id and r.provenance.torch_source == "sandbox image"
        assert r.timings.by_action["execute_bash"] > 0 and r.timings.verification_s > 0
    replay = run(tmp_path, toy_tasks, ReplayAgent(tmp_path), mode="docker", concurrency=2, owner=owner)
    assert replay.ran == 2 and replay.replay_mismatches == 0
    mine = f"sandbox-env.owner={owner}"
    left = labelled(client, mine) + client.volumes.list(filters={"label": mine})
    assert not left, left  # the shared DockerSandbox was closed at the end of each run
