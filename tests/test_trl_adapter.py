"""The TRL adapter (sandbox_env.trl), driven as TRL's GRPOTrainer drives it: in process and over HTTP."""

from __future__ import annotations

import gc
import inspect
import os
import re
import subprocess
import sys
import textwrap
import typing
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from sandbox_env.environment import EpisodeDone, InvalidAction
from sandbox_env.models import ACTION_TYPES
from sandbox_env.suite.oracle import oracle_actions
from sandbox_env.suite.tasks import TaskRegistry, UnknownTask
from sandbox_env.trl import URL_ENV_VARS, TriageToolEnv, reward_fn

from .conftest import ROOT, start_server

TASK_IDS = TaskRegistry(ROOT / "task_repos").ids()
NO_FIX = "I looked at the code and I think the failure is caused by the environment, not the code."


def tool_methods(env: object) -> dict[str, Any]:
    """What TRL exposes as tools: public bound methods other than its reserved ones."""
    return {name: m for name, m in inspect.getmembers(env, predicate=inspect.ismethod)
            if not name.startswith("_") and name not in ("reset", "get_reward")}


def call(env: TriageToolEnv, action: dict[str, Any]) -> str:
    """One environment action as the tool call a model would make (name + keyword arguments)."""
    args = {k: v for k, v in action.items() if k != "action_type"}
    return tool_methods(env)[action["action_type"]](**args)


@pytest.fixture
def local_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for var in (*URL_ENV_VARS, "SANDBOX_ENV_JUDGE_MODEL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SANDBOX_ENV_TASK_ROOT", str(ROOT / "task_repos"))
    yield


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    proc, url = start_server(ROOT / "task_repos", "mock")
    yield url
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture(params=["in-process", "remote"])
def transport(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both transports; the remote one reads SANDBOX_ENV_URL when an instance is built."""
    for var in (*URL_ENV_VARS, "SANDBOX_ENV_JUDGE_MODEL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SANDBOX_ENV_TASK_ROOT", str(ROOT / "task_repos"))
    if request.param == "remote":
        monkeypatch.setenv("SANDBOX_ENV_URL", request.getfixturevalue("server_url"))
    return request.param


# ---------------------------------------------------------------------------- episodes
@pytest.mark.parametrize("task_id", TASK_IDS)
def test_oracle_episode_scores_high(transport: str, task_id: str) -> None:
    task = TaskRegistry(ROOT / "task_repos").get(task_id)
    env = TriageToolEnv()
    prompt = env.reset(prompt=[{"role": "user", "content": "Fix it."}], task=task_id, difficulty="x")
    assert task_id in prompt and "python train.py" in prompt and "Step budget" in prompt
    assert task.repo_files()[task.signal_files[0]] not in prompt  # not every file's content
    assert (env.reward, env.done, env.task) == (0.0, False, task_id)
    outputs = [call(env, a) for a in oracle_actions(task)]
    assert all(isinstance(o, str) and o for o in outputs)
    assert "step 1/" in outputs[0] and "Verification PASSED" in outputs[-1]
    assert "episode over" in outputs[-1]
    assert env.done and env.reward >= 0.9 and env.score == env.reward
    assert 0 < env.shaped_reward <= 0.2
    assert reward_fn([env]) == [env.reward]
    with pytest.raises(EpisodeDone, match="Stop calling tools"):
        env.view_git_diff()
    env._close()


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_submit_without_a_fix_scores_low(transport: str, task_id: str) -> None:
    env = TriageToolEnv()
    env.reset(task=task_id)
    out = env.submit_fix(NO_FIX)
    assert "Verification FAILED" in out and env.done and env.reward < 0.2
    env._close()


def test_instances_are_reused_across_episodes(transport: str) -> None:
    """TRL pools instances: reset() after a finished episode starts a clean one."""
    env = TriageToolEnv()
    env.reset(task=TASK_IDS[0])
    env.submit_fix(NO_FIX)
    assert env.done
    env.reset(task_id=TASK_IDS[-1])
    fresh = (env.done, env.reward, env.shaped_reward, env.score, env.task)
    assert fresh == (False, 0.0, 0.0, None, TASK_IDS[-1])
    assert "step 1/" in env.view_git_diff()
    a, b = TriageToolEnv(), TriageToolEnv()
    assert a.reset(seed=7).splitlines()[0] == b.reset(seed=7).splitlines()[0]  # the seed picks the task
    for e in (env, a, b):
        e._close()


def test_remote_reset_closes_the_previous_session(monkeypatch: pytest.MonkeyPatch, server_url: str) -> None:
    monkeypatch.setenv("SANDBOX_ENV_URL", server_url)

    def active() -> int:
        return httpx.get(server_url + "/health").json()["active_sessions"]

    before = active()
    with TriageToolEnv() as env:
        env.reset(task=TASK_IDS[0])
        env.reset(task=TASK_IDS[0])
        assert active() == before + 1
    assert active() == before


def active_sessions(url: str) -> int:
    return httpx.get(url + "/health").json()["active_sessions"]


def test_remote_sessions_close_when_instances_are_dropped(monkeypatch: pytest.MonkeyPatch,
                                                          server_url: str) -> None:
    """TRL never closes its environments: garbage collection frees their server episodes at once."""
    monkeypatch.setenv("SANDBOX_ENV_URL", server_url)
    before = active_sessions(server_url)
    envs = [TriageToolEnv() for _ in range(3)]
    for env in envs:
        env.reset(task=TASK_IDS[0])
    envs[0].submit_fix(NO_FIX)  # a finished episode is still a live session until closed
    assert active_sessions(server_url) == before + 3
    envs.append(TriageToolEnv())  # never reset: nothing to close
    del env
    envs.clear()
    gc.collect()
    assert active_sessions(server_url) == before


def run_python(code: str, *args: str, url: str) -> subprocess.CompletedProcess[str]:
    """A fresh interpreter with SANDBOX_ENV_URL set (and no LLM judge), its output captured."""
    env = {k: v for k, v in os.environ.items() if k not in (*URL_ENV_VARS, "SANDBOX_ENV_JUDGE_MODEL")}
    return subprocess.run([sys.executable, "-c", code, *args], env={**env, "SANDBOX_ENV_URL": url},
                          capture_output=True, text=True, timeout=60, check=False)


def test_remote_sessions_close_at_interpreter_exit(server_url: str) -> None:
    """Instances alive at exit (e.g. in a trainer's pool) close their episodes; a dead server is ignored."""
    script = textwrap.dedent("""
        import sys
        from sandbox_env.trl import TriageToolEnv
        keep = [TriageToolEnv() for _ in range(2)]
        for env in keep:
            env.reset(task=sys.argv[1])
        sys.modules["__main__"].keep_alive = keep  # still referenced when the interpreter exits
        print("started", flush=True)
    """)
    before = active_sessions(server_url)
    done = run_python(script, TASK_IDS[0], url=server_url)
    assert done.returncode == 0 and "started" in done.stdout, done.stderr
    assert active_sessions(server_url) == before
    # the server went away: the finalizer gives up quietly (nothing listens on port 9)
    dead = run_python("from sandbox_env.trl import TriageToolEnv\n"
                      "e = TriageToolEnv(); e._episode.episode_id = 'gone'", url="http://127.0.0.1:9")
    assert dead.returncode == 0 and not dead.stderr.strip(), dead.stderr


def test_reset_text_starts_on_its_own_line(transport: str) -> None:
    """TRL appends reset()'s text to the last user message as is: it must not run on from the prompt."""
    env = TriageToolEnv()
    prompt = [{"role": "user", "content": "Fix the failing job."}]
    text = env.reset(prompt=prompt, task=TASK_IDS[0])
    assert text.startswith("\n\n# Incident (")
    merged = prompt[-1]["content"] + text  # exactly what GRPOTrainer builds
    assert merged.splitlines()[:3] == ["Fix the failing job.", "", f"# Incident ({TASK_IDS[0]})"]
    env._close()


def test_observations_are_compact(transport: str) -> None:
    """Each step's observation carries only the files it read or changed, not the whole workspace."""
    env = TriageToolEnv()
    env.reset(task="oom_graph_leak")
    obs = env.observation
    assert obs is not None and len(obs.files) > 1 and set(obs.current_files) == set(obs.files)
    env.read_file("train.py")
    assert list(env.observation.current_files) == ["train.py"]  # type: ignore[union-attr]
    env.view_git_diff()
    assert env.observation.current_files == {}  # type: ignore[union-attr]
    env._close()


def test_construction_is_cheap_and_does_no_io(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SANDBOX_ENV_URL", "http://127.0.0.1:9")  # nothing listens: must not matter
    envs = [TriageToolEnv() for _ in range(64)]
    assert all(e.reward == 0.0 and not e.done for e in envs)
    with pytest.raises(RuntimeError, match="did not answer"):
        envs[0].reset(task=TASK_IDS[0])


# ---------------------------------------------------------------------------- errors
def test_bad_edit_is_a_readable_result_not_an_exception(transport: str) -> None:
    env = TriageToolEnv()
    env.reset(task="oom_graph_leak")
    out = env.edit_file("train.py", "this text is not in the file", "x")
    assert out.startswith("Error: old_str not found in train.py") and "step 1/" in out
    out = env.read_file("../../etc/passwd")
    assert out.startswith("Error:") and "outside the workspace" in out
    assert not env.done and env.reward == 0.0
    env._close()


def test_invalid_calls_raise_what_trl_feeds_back(transport: str) -> None:
    env = TriageToolEnv()
    with pytest.raises(RuntimeError, match="reset"):
        env.read_file("train.py")
    env.reset(task="oom_graph_leak")
    with pytest.raises(InvalidAction, match="filename"):
        env.read_file("")
    assert "step 1/" in env.view_git_diff()  # the refused call used no step
    env._close()


def test_unknown_task_is_a_clear_error(transport: str) -> None:
    env = TriageToolEnv()
    with pytest.raises(UnknownTask) as info:
        env.reset(task="no_such_task")
    assert "no_such_task" in str(info.value) and all(t in str(info.value) for t in TASK_IDS)
    env._close()


def test_budget_exhaustion_ends_the_episode_unverified(local_env: None) -> None:
    env = TriageToolEnv()
    env.reset(task="oom_graph_leak")
    budget = env.observation.max_steps  # type: ignore[union-attr]
    outs = [env.view_git_diff() for _ in range(budget)]
    assert "step budget exhausted" in outs[-1] and "episode over" in outs[-1]
    assert env.done and env.reward < 0.01 and env.shaped_reward < 0  # repeats are penalised
    with pytest.raises(EpisodeDone):
        env.submit_fix(NO_FIX)


def test_long_output_keeps_head_and_tail(local_env: None) -> None:
    env = TriageToolEnv()
    env.max_output_chars = 600
    env.reset(task="oom_graph_leak")
    out = env.read_file("train.py")
    assert "characters omitted" in out and out.startswith('"""') and "main()" in out
    assert out.endswith("training run: not_run]")


def test_reward_fn_skips_other_environments(local_env: None) -> None:
    env = TriageToolEnv()
    assert reward_fn([env, object()]) == [0.0, None]


# ---------------------------------------------------------------------------- what TRL relies on
def docstring_args(doc: str) -> list[str]:
    """Argument names of a Google-style ``Args:`` section (what transformers' get_json_schema reads)."""
    m = re.search(r"\n\s*Args:\n(.*?)(?:\n\s*(?:Returns|Raises):|\Z)", doc, re.DOTALL)
    assert m, "no Args: section"
    # like transformers, any line that starts with `word:` opens an argument (so a continuation
    # line must not look like one)
    return [m.group(1) for ln in m.group(1).splitlines() if (m := re.match(r"\s*(\w+):", ln))]


def test_tools_are_exactly_the_actions_with_schemas(local_env: None) -> None:
    env = TriageToolEnv()
    tools = tool_methods(env)
    assert sorted(tools) == sorted(ACTION_TYPES)
    assert not hasattr(env, "get_reward")  # TRL < 1.8 would expose it as a tool
    assert not inspect.signature(TriageToolEnv).parameters  # no-argument constructor
    for name, method in tools.items():
        doc = inspect.getdoc(method)
        assert doc and doc.splitlines()[0].strip(), name
        params = inspect.signature(method).parameters
        assert docstring_args(doc) == list(params), name
        hints = typing.get_type_hints(method)
        assert hints.pop("return") is str, name
        assert set(hints) == set(params), f"{name}: every argument needs a type hint"
        assert all(h in (str, str | None) for h in hints.values()), name
        assert "\nReturns:\n" in doc, name
    assert inspect.signature(env.view_git_diff).parameters["filename"].default is None


def test_tool_schemas_with_transformers(local_env: None) -> None:
    """The real schema builder TRL uses, when transformers is installed."""
    utils = pytest.importorskip("transformers.utils")
    for name, method in tool_methods(TriageToolEnv()).items():
        schema = utils.get_json_schema(method)["function"]
        assert schema["name"] == name and schema["description"]
        assert list(schema["parameters"]["properties"]) == list(inspect.signature(method).parameters)
