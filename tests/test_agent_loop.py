"""sandbox_env.agent.loop against in-memory fakes: the corrective retry, refused actions, replies with
several actions, model failures mid-episode and the score of an unfinished one; and the compact
observations the agent and the eval's policies ask for.

The end-to-end runs over a real server and a scripted chat server are in test_agent.py."""

from __future__ import annotations

import json
from typing import Any

import openai

from sandbox_env.agent import AgentConfig, ask_for_action, run_episode
from sandbox_env.client import EnvClientError
from sandbox_env.environment import TriageEnvironment
from sandbox_env.eval import LLMAgent, OracleAgent
from sandbox_env.eval.policies import AgentResult
from sandbox_env.eval.session import EpisodeSession
from sandbox_env.models import Observation, State, StepResult
from sandbox_env.sandbox import MockSandbox
from sandbox_env.suite.tasks import TaskRegistry

from .test_agent_model_client import FakeLLM, chat_reply, status_error

READ = {"action_type": "read_file", "filename": "a.py"}
RUN = {"action_type": "execute_bash", "command": "python a.py"}


def _obs(step: int = 0, **kw: Any) -> Observation:
    base: dict[str, Any] = {"task_name": "t", "task_description": "it fails", "max_steps": 5,
                            "budget_remaining": 5 - step, "step_number": step, "episode_id": "ep-1",
                            "mode": "mock", "files": ["a.py"]}
    return Observation.model_validate(base | kw)


class FakeEnv:
    """reset / step / state / close_episode like TriageClient; step answers from a script."""

    def __init__(self, *script: Observation | EnvClientError, score: float | None = None) -> None:
        self.script = list(script)
        self.sent: list[dict[str, Any]] = []
        self.resets: list[dict[str, Any]] = []
        self.closed = False
        self.final_score = score

    def reset(self, **kw: Any) -> StepResult:
        self.resets.append(kw)
        return StepResult(observation=_obs(), reward=0.0, done=False, episode_id="ep-1")

    def step(self, action: dict[str, Any]) -> StepResult:
        self.sent.append(action)
        item = self.script.pop(0)
        if isinstance(item, EnvClientError):
            raise item
        return StepResult(observation=item, reward=item.reward, done=item.done, episode_id="ep-1")

    def state(self) -> State:
        return State(episode_id="ep-1", task_name="t", mode="mock", max_steps=5,
                     done=self.final_score is not None, score=self.final_score)

    def close_episode(self) -> None:
        self.closed = True


def play(env: FakeEnv, llm: FakeLLM, **kw: Any) -> tuple[Any, list[str]]:
    lines: list[str] = []
    cfg = AgentConfig(api_key="k", model="m", seed=3, **kw)
    res = run_episode(env, llm, "t", cfg, emit=lines.append, sleep=lambda _: None)  # type: ignore[arg-type]
    return res, lines


def test_one_corrective_retry_per_turn() -> None:
    llm = FakeLLM(chat_reply("thinking..."), chat_reply(json.dumps(READ)))
    turn = ask_for_action(llm, [{"role": "user", "content": "go"}], AgentConfig(api_key="k"))  # type: ignore[arg-type]
    assert turn.parsed is not None and turn.calls == 2 and turn.error is None
    assert llm.calls[1]["messages"][-2] == {"role": "assistant", "content": "thinking..."}
    assert llm.calls[1]["messages"][-1]["content"].startswith("Your reply could not be used: no JSON")
    llm = FakeLLM(chat_reply("", "length"), chat_reply("still prose"))
    turn = ask_for_action(llm, [], AgentConfig(api_key="k"))  # type: ignore[arg-type]
    assert turn.parsed is None and turn.error == "no JSON object found in the reply" and turn.calls == 2
    assert llm.calls[1]["messages"][-2]["content"] == "(empty)"
    assert "cut off at the token limit" in llm.calls[1]["messages"][-1]["content"]


def test_a_refused_action_is_logged_and_the_model_told() -> None:
    env = FakeEnv(EnvClientError(422, "old_str not found"), _obs(1, reward=0.05, done=True, score=0.9))
    res, lines = play(env, FakeLLM(chat_reply(json.dumps(READ)), chat_reply(json.dumps(RUN))))
    # the seed seeds the model; the agent pins variant 0 (with a task, a seed alone picks a variant)
    assert env.resets == [{"task": "t@0", "seed": 3, "compact": True}]
    assert env.sent == [READ, RUN] and env.closed
    assert lines[1] == ("[STEP] step=1 action=read_file(a.py) reward=0.00 done=false "
                        "error=environment refused the action: HTTP 422: old_str not found")
    assert res.done and res.score == 0.9 and res.env_steps == 1 and res.steps == 2 and res.error is None
    assert lines[-1] == "[END] success=false steps=2 score=0.900 rewards=0.00,0.05"


def test_a_gone_episode_ends_the_loop() -> None:
    env = FakeEnv(EnvClientError(409, "episode is done"))
    res, lines = play(env, FakeLLM(chat_reply(json.dumps(RUN))))
    assert res.error == "environment error: HTTP 409: episode is done" and not res.done
    assert res.score == 0.001 and len(lines) == 3


def test_only_the_first_of_several_actions_is_sent_and_the_model_told() -> None:
    env = FakeEnv(_obs(1, terminal_output="ran"), _obs(2, done=True, score=0.5))
    llm = FakeLLM(chat_reply(json.dumps(RUN) + "\n" + json.dumps(READ)), chat_reply(json.dumps(READ)))
    res, _ = play(env, llm)
    assert env.sent == [RUN, READ] and res.score == 0.5
    assert "Note: your reply held 2 actions; only the first was executed." in llm.calls[1]["messages"][-1][
        "content"]


def test_model_failure_mid_episode_keeps_the_log_and_asks_the_state_for_the_score() -> None:
    env = FakeEnv(_obs(1), score=0.2)
    llm = FakeLLM(chat_reply(json.dumps(RUN)), status_error(openai.BadRequestError, 400))
    res, lines = play(env, llm)
    assert res.error is not None and res.error.startswith("model API refused the request: HTTP 400")
    assert res.steps == 1 and res.llm_calls == 1 and res.score == 0.2 and env.closed
    assert lines[-1] == "[END] success=false steps=1 score=0.200 rewards=0.00"


def test_the_turn_limit_ends_an_endless_episode() -> None:
    env = FakeEnv(*[_obs(i) for i in range(1, 4)])
    res, lines = play(env, FakeLLM(*[chat_reply(json.dumps(RUN))] * 3), max_turns=3)
    assert res.error == "turn limit 3 reached before the episode ended" and res.steps == 3
    assert res.score == 0.001 and len(lines) == 5


def test_agent_and_eval_policies_ask_the_in_process_session_for_compact_observations(
        toy_tasks: TaskRegistry) -> None:
    task = toy_tasks.get("toy_mean")
    session = EpisodeSession(TriageEnvironment(toy_tasks, MockSandbox()))
    assert OracleAgent().play(session, task, 0) == AgentResult()
    assert session.env.compact and session.initial is not None
    assert set(session.initial.files) == {"report.py", "stats.py"}  # every file on reset
    shown = [(s.action_type, set(s.observation.files)) for s in session.steps if s.observation]
    assert shown[:3] == [("execute_bash", set()), ("read_file", {"stats.py"}), ("edit_file", {"stats.py"})]

    session = EpisodeSession(TriageEnvironment(toy_tasks, MockSandbox()))
    llm = FakeLLM(chat_reply(json.dumps({"action_type": "read_file", "filename": "stats.py"})),
                  status_error(openai.BadRequestError, 400))
    LLMAgent(AgentConfig(api_key="k", model="m"), llm=llm).play(session, task, 0)  # type: ignore[arg-type]
    assert session.env.compact and [set(s.observation.files) for s in session.steps
                                    if s.observation] == [{"stats.py"}]
    assert "report.py" not in llm.calls[1]["messages"][-1]["content"]  # only the file read is shown
