"""The TRL adapter: sandbox-env episodes as a TRL ``GRPOTrainer(environment_factory=...)`` class.

This module has one job: expose a debugging episode in the shape TRL's ``environment_factory``
expects, without importing TRL. The contract it follows (TRL docs, "OpenEnv Integration",
https://huggingface.co/docs/trl/en/openenv.md, and ``trl/trainer/grpo_trainer.py``):

- the trainer calls the class with no arguments, once per concurrent rollout, and reuses the
  instances: ``reset(**row)`` starts every episode, with the dataset row's columns as keyword
  arguments; a returned string is appended to the row's last user message (or is the whole
  prompt when training without a dataset);
- every public method other than ``reset`` (and ``get_reward`` on TRL >= 1.8) is a tool; its
  JSON schema is built by ``transformers.utils.get_json_schema`` from the type hints and the
  Google-style docstring, so every argument needs a hint and an ``Args:`` entry;
- a tool's return value is sent to the model as the tool message (``str(result)``); an
  exception is caught and sent as ``{"error": str(exc)}`` and counted as a tool failure, which
  TRL recommends for invalid calls and for calls after the episode ended;
- reward functions receive ``environments`` (one instance per completion) and read state from
  them before the next ``reset``.

Reward convention: ``reward`` is outcome-only, as TRL's docs advise ("simple rewards work
well", "check the final state, not the path"): 0.0 until the episode ends, then the
environment's terminal score (a verified fix 0.6-0.999, an unverified one < 0.2, the step
budget exhausted 0.001). The per-step shaping is kept apart in ``shaped_reward`` for anyone who
wants partial credit. ``get_reward`` is deliberately not defined: TRL < 1.8 would expose it to
the model as a tool; on TRL >= 1.8 a subclass may add ``def get_reward(self): return self.reward``
instead of passing :func:`reward_fn` (not both, or the reward counts twice).

Transport, chosen when an instance is built: with ``SANDBOX_ENV_URL`` (or ``ENV_URL``) set,
episodes run on that sandbox-env server over HTTP (one live episode per instance). TRL never
closes its environments, so an instance closes its server episode itself: at the next reset,
when it is garbage-collected, and at interpreter exit (``weakref.finalize``, with a short
timeout, errors ignored), so finished runs free their sessions without waiting for the server's
idle timeout. Otherwise in process, in mock mode, over the tasks in ``SANDBOX_ENV_TASK_ROOT``
(or the package's ``task_repos``); with ``SANDBOX_ENV_RAY_ADDRESS`` set, that sandbox sends every
run and verification to the sandbox actors of that Ray cluster's nodes, each running
``SANDBOX_ENV_RAY_INNER`` (default mock; docker for real runs), and without it Ray is never
imported. The in-process registry, sandbox and judge are built once per
process and shared, so constructing many instances is cheap. For docker mode, run a server
(``MODE=docker bash scripts/start.sh``) and point ``SANDBOX_ENV_URL`` at it. Both transports ask
for the compact observation (``reset(compact=True)``): ``current_files`` holds only the files a
step read or changed, not the whole workspace on every step.
"""

from __future__ import annotations

import os
import threading
import weakref
from pathlib import Path
from typing import Any

from .actions import ACTIONS, ActionModel, tool_docstring
from .agent_view import TOOL_OUTPUT_CHARS, tool_result
from .client import TriageClient
from .environment import LocalEpisode, TriageEnvironment
from .errors import EnvError, EpisodeDone
from .instructions import conditions_of
from .models import Observation
from .protocol import Episode
from .suite.tasks import TaskRegistry, default_task_root

URL_ENV_VARS = ("SANDBOX_ENV_URL", "ENV_URL")
RELEASE_TIMEOUT_S = 5.0  # closing an episode at garbage collection or exit never waits longer
ENDS_EPISODE = ("EPISODE_DONE", "UNKNOWN_EPISODE", "NOT_RESET")  # codes after which no tool runs

_shared_lock = threading.Lock()
_shared_registries: dict[Path, TaskRegistry] = {}
_shared_parts: dict[str, Any] = {}  # "sandbox", "judge": built on first in-process reset


def _shared_registry(root: Path) -> TaskRegistry:
    """One registry per task root and process (it caches file contents and classifiers)."""
    with _shared_lock:
        if root not in _shared_registries:
            _shared_registries[root] = TaskRegistry(root)
        return _shared_registries[root]


def _local_episode(root: Path) -> LocalEpisode:
    """An in-process episode over the process's shared mock sandbox and judge."""
    from .rubrics import default_judge
    from .sandbox import make_sandbox
    from .sandbox.ray_backend import env_mode

    with _shared_lock:
        if not _shared_parts:
            _shared_parts["sandbox"] = make_sandbox(env_mode("mock"), owner=f"trl-{os.getpid()}")
            _shared_parts["judge"] = default_judge()
        sandbox, judge = _shared_parts["sandbox"], _shared_parts["judge"]
    return LocalEpisode(TriageEnvironment(_shared_registry(root), sandbox, judge))


class _ServerUnreachable(RuntimeError):
    """The sandbox-env server did not answer (TRL shows the message as the tool's error)."""


def _remote(url: str, call: Any, *args: Any, **kw: Any) -> Any:
    import httpx

    try:
        return call(*args, **kw)
    except httpx.HTTPError as exc:
        raise _ServerUnreachable(f"sandbox-env server at {url} did not answer: "
                                 f"{type(exc).__name__}: {exc}") from exc


def _release(url: str, client: TriageClient) -> None:
    """Close a remote episode from a finalizer (GC or interpreter exit): bounded, never raises.

    A fresh short-timeout request rather than the client's pool (whose timeout suits steps that
    run a training job), so a hung or vanished server cannot stall garbage collection or exit.
    """
    try:
        if client.episode_id:
            import httpx

            httpx.post(url.rstrip("/") + "/close", json={"episode_id": client.episode_id},
                       timeout=RELEASE_TIMEOUT_S)
    except Exception:  # the server is gone or the episode expired: nothing left to free
        pass
    finally:
        client.episode_id = None
        try:
            client.close()
        except Exception:
            pass


def _tool_method(model: type[ActionModel]) -> Any:
    """A TRL tool for one action, derived from the action table: name, typed arguments (with
    the model's defaults) and a Google-style docstring that get_json_schema reads."""
    kind = model.kind()

    def tool(self: TriageToolEnv, *args: Any, **kwargs: Any) -> str:
        return self._act({"action_type": kind, **model.bind_arguments(tool, self, *args, **kwargs)})

    return model.as_tool_method(tool, kind, tool_docstring(model))


class TriageToolEnv:
    """One sandbox-env debugging episode per rollout, for ``GRPOTrainer(environment_factory=...)``.

    The model gets five tools (``read_file``, ``edit_file``, ``execute_bash``, ``view_git_diff``,
    ``submit_fix``); each returns the terminal output, any error and a short status line.
    ``submit_fix`` (or the last step of the budget) ends the episode; any later call raises
    :class:`~sandbox_env.environment.EpisodeDone` and an invalid call (e.g. an empty filename)
    :class:`~sandbox_env.environment.InvalidAction`, which TRL feeds back to the model as the
    tool's error.

    Attributes:
        reward: 0.0 until the episode ends, then its terminal score (what :func:`reward_fn` returns).
        shaped_reward: the sum of the per-step shaping rewards so far (capped at 0.2 by the rubric).
        done: whether the episode has ended (fix submitted or step budget exhausted).
        score: the terminal score, None before the episode ends.
        task: the id of the current task.
        observation: the last :class:`~sandbox_env.models.Observation` received.
    """

    max_output_chars = TOOL_OUTPUT_CHARS  # longer tool output keeps its head and tail

    def __init__(self) -> None:
        self._url = next((os.environ[v] for v in URL_ENV_VARS if os.environ.get(v)), None)
        self._episode: Episode | None = None  # the episode protocol: TriageClient or LocalEpisode
        if self._url:
            client = TriageClient(self._url)
            self._episode = client
            # TRL never closes its environments: free the server episode when this instance is
            # collected or at exit. The callback holds the client, never the instance.
            weakref.finalize(self, _release, self._url, client)
        self._started = False
        self._last_hint: str | None = None
        self.reward = 0.0
        self.shaped_reward = 0.0
        self.done = False
        self.score: float | None = None
        self.unsure = False  # the mock could not judge the submitted fix: no reward, not 0
        self.task: str | None = None
        self.observation: Observation | None = None

    # ------------------------------------------------------------------ reserved by TRL
    def reset(self, **kwargs: Any) -> str:
        """Start an episode and return the incident, the file list and the run command as text.

        The text begins with a blank line: TRL appends it to the last user message as is, so the
        incident starts on its own line after the dataset's prompt.

        Reads ``task`` (or ``task_id``) and ``seed`` from the dataset row; every other column
        (``prompt`` included) is ignored. Without a task, the seed picks one (no seed: random).
        Raises UnknownTask (naming the available tasks) for a task id that does not exist.
        """
        task = kwargs.get("task") or kwargs.get("task_id") or None
        seed = kwargs.get("seed")
        self._started = False  # until the new episode exists (a failed reset leaves none usable)
        obs = self._reset(str(task) if task else None, None if seed is None else int(seed))
        self._started, self._last_hint = True, None
        self.reward, self.shaped_reward, self.done, self.score, self.unsure = 0.0, 0.0, False, None, False
        self.task, self.observation = obs.task_name, obs
        return (
            f"\n\n# Incident ({obs.task_name})\n{obs.task_description.strip()}\n\n"
            f"{obs.terminal_output.strip()}\n"
            f"Step budget: {obs.max_steps} tool calls.\n{conditions_of(obs.instructions)}\n\n"
            "Reproduce the failure, find the root cause, fix it with minimal edits, then call "
            "submit_fix with an explanation of the root cause, the mechanism and why the fix works. "
            "Hidden checks run the code with their own settings: workarounds that hide the failure "
            "(catching exceptions, exiting early, shrinking the workload, raising timeouts, disabling "
            "the feature) are rejected."
        )

    # ------------------------------------------------------------------ helpers
    def _reset(self, task: str | None, seed: int | None) -> Observation:
        if self._episode is None:
            self._episode = _local_episode(default_task_root())
        if self._url:  # one live server episode per instance: the previous one is closed first
            self._close_episode()
            return _remote(self._url, self._episode.reset, task=task, seed=seed, compact=True).observation
        return self._episode.reset(task=task, seed=seed, compact=True).observation

    def _step(self, action: dict[str, Any]) -> Observation:
        assert self._episode is not None
        if self._url:
            return _remote(self._url, self._episode.step, action).observation
        return self._episode.step(action).observation

    def _close_episode(self) -> None:
        if self._episode is not None:
            try:
                self._episode.close_episode()
            except (EnvError, _ServerUnreachable, OSError):
                pass  # already expired, or the server restarted: nothing to free

    def _act(self, action: dict[str, Any]) -> str:
        if not self._started:
            raise RuntimeError("reset() must be called before any tool")
        if self.done:
            score = "" if self.score is None else f" (score {self.score:.3f})"
            raise EpisodeDone(f"The episode is over{score}; no tool call is accepted any more. "
                              "Stop calling tools.")
        try:
            obs = self._step(action)
        except EnvError as exc:
            if exc.code in ENDS_EPISODE:
                self.done = True
            raise
        self.observation = obs
        if action["action_type"] != "submit_fix":
            self.shaped_reward = round(self.shaped_reward + obs.reward, 6)
        if obs.done:
            self.done = True
            self.unsure = obs.verdict is not None and obs.verdict.provenance == "unsure"
            self.score = None if self.unsure else (obs.score if obs.score is not None else obs.reward)
            self.reward = 0.0 if self.score is None else float(self.score)
        return self._render(obs)

    def _render(self, obs: Observation) -> str:
        text, self._last_hint = tool_result(obs, self._last_hint, self.max_output_chars, self.reward)
        return text

    def _close(self) -> None:
        """Free the episode (remote: close the server session). Not a tool: TRL never calls it."""
        self._close_episode()
        if isinstance(self._episode, TriageClient):
            self._episode.close()

    def __enter__(self) -> TriageToolEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self._close()


for _model in ACTIONS:  # the five tools, derived from the action table
    setattr(TriageToolEnv, _model.kind(), _tool_method(_model))


def reward_fn(environments: list[Any], **kwargs: Any) -> list[float | None]:
    """TRL reward function: each rollout's terminal score (None for other environment types).

    Pass as ``GRPOTrainer(reward_funcs=reward_fn, environment_factory=TriageToolEnv)``. TRL calls
    it after the rollouts, before the environments are reset; ``None`` marks rollouts TRL must
    ignore: other environments of a multi-environment run, and episodes whose fix the mock could
    not judge (verdict provenance ``unsure``: a guess would be a false reward).
    """
    return [env.reward if isinstance(env, TriageToolEnv) and not env.unsure else None for env in environments]


__all__ = ["URL_ENV_VARS", "TriageToolEnv", "reward_fn"]
