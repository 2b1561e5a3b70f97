"""The verifiers environment: sandbox-env's families as a ``verifiers`` (0.4, ``verifiers.v1``) taskset.

This module has one job: expose the debugging episodes to Prime Intellect's verifiers: a taskset
plugin (``TriageTaskset``, found by verifiers through this module's ``__all__``), a per-rollout MCP
toolset with the five actions as tools (``TriageToolset``, derived from ``actions.ACTIONS``), the
terminal score as the reward, and ``load_environment(split=..., mode=...)`` returning a ready
``vf.Env``. Evaluate it with verifiers' own CLI::

    vf-eval sandbox-env-triage --env.taskset.split test \\
        --env.taskset.task.mode mock --env.agent.harness.id null \\
        --env.agent.runtime.type subprocess --model MODEL --client.base-url URL

How a rollout runs (verifiers' own machinery): the harness (``null``: a chat loop whose only
tools are the taskset's MCP tools) gets the reset observation's instructions as its system prompt
and the incident report with the workspace listing as its prompt (``harnesses.common``: the
observation's own text fields). verifiers starts one ``TriageToolset`` server per rollout
(``python -m sandbox_env.harnesses.verifiers_env``); its ``setup_task`` resets an episode on the
rollout's task (in process in ``mode``, or on the sandbox-env server at ``url``), each tool call
steps it and returns the observation text an HTTP agent sees, and the episode's result (terminal
score, verdict outcome and reasons) is written to the rollout's shared state. The episode is
closed as soon as it ends (``submit_fix`` or the step budget) and otherwise when the server
stops. The reward ``terminal_score`` reads that state: 0.6-1.0 for a verified fix, < 0.2 for an
unverified one, 0 when the rollout never ended its episode or the mock could not judge.
"""

from __future__ import annotations

import typing
from collections.abc import Iterator
from typing import Any

import verifiers.v1 as vf
from pydantic import Field

from sandbox_env.actions import ActionModel
from sandbox_env.harnesses.common import (
    SPLITS,
    TOOLS,
    HarnessEpisode,
    close_sandboxes,
    registry,
    task_ids,
    task_metadata,
)

TASKSET_ID = "sandbox-env-triage"  # the plugin package (harnesses/verifiers_package), see its pyproject


class TriageState(vf.State):
    """The rollout's state shared by the tool server and the host: the episode's result."""

    result: dict[str, Any] = Field(default_factory=dict)


class TriageToolsetConfig(vf.ToolsetConfig):
    mode: str = "mock"
    """Where agent code runs, in the tool server's process: mock, process or docker."""
    url: str | None = None
    """A sandbox-env server to play the episodes on instead (its own mode applies)."""
    task_root: str | None = None
    """Another task folder (default: the package's task_repos or $SANDBOX_ENV_TASK_ROOT)."""


class TriageTaskConfig(vf.TaskConfig):
    mode: str = "mock"
    """mock (replays), process (bubblewrap) or docker; ignored when `url` is set."""
    url: str | None = None
    """A sandbox-env server to play the episodes on."""
    task_root: str | None = None


class TriageData(vf.TaskData):
    task: str
    """``family@N``: the variant this rollout plays."""
    family: str
    variant: int
    split: str


def _tool_method(model: type[ActionModel]) -> Any:
    """One action as a toolset method: its arguments (typed, with the model's defaults) and the
    action's docstring, so MCP advertises the same schema as every other face."""
    spec = next(t for t in TOOLS if t.model is model)

    async def tool(self: TriageToolset, *args: Any, **kwargs: Any) -> str:
        return await self.act(spec.name, model.bind_arguments(tool, self, *args, **kwargs))

    lines = [spec.description, ""] + [f"{n}: {spec.argument_description(n)}" for n in model.argument_names()]
    return vf.tool(model.as_tool_method(tool, spec.name, "\n".join(lines).strip()), name=spec.name)


class TriageToolset(vf.Toolset[TriageToolsetConfig, TriageState]):
    """The five actions as MCP tools over one episode per rollout (one server per rollout)."""

    TOOL_PREFIX = None  # advertised bare: read_file, edit_file, ... as over HTTP and MCP

    def __init__(self, config: TriageToolsetConfig) -> None:
        super().__init__(config)
        self.episode: HarnessEpisode | None = None

    async def setup(self) -> None:
        self._exit_stack.push_async_callback(self._close)

    async def setup_task(self, task: Any) -> None:
        import anyio

        self.episode = HarnessEpisode(self.config.mode, self.config.url, self.config.task_root)
        data = getattr(task, "data", task)  # verifiers hands the server the task's data
        await anyio.to_thread.run_sync(self.episode.start, data.task)

    async def act(self, kind: str, arguments: dict[str, Any]) -> str:
        import anyio

        if self.episode is None:
            return "Error: no episode is running for this rollout."
        text = await anyio.to_thread.run_sync(self.episode.act, kind, arguments)
        if self.episode.result is not None:
            self.state.result = self.episode.result.as_dict()
            if self.episode.done:  # the episode is over: free it now, the result stays
                await anyio.to_thread.run_sync(self.episode.close)
        return text

    async def _close(self) -> None:
        if self.episode is not None:
            self.episode.close()
        close_sandboxes()


for _spec in TOOLS:  # the five tools, derived from the action table
    setattr(TriageToolset, _spec.name, _tool_method(_spec.model))


class TriageTask(vf.Task[TriageData, TriageState, TriageTaskConfig]):
    """One task variant: its prompts are the reset observation's texts; scored by the episode."""

    @property
    def key(self) -> str:
        return self.data.task

    @classmethod
    def toolsets(cls, config: TriageTaskConfig) -> list[vf.Toolset]:
        return [TriageToolset(TriageToolsetConfig(mode=config.mode, url=config.url,
                                                  task_root=config.task_root))]

    @vf.stop
    async def episode_over(self, trace: vf.Trace) -> bool:
        return bool(_result(trace).get("done"))

    @vf.reward
    async def terminal_score(self, trace: vf.Trace) -> float:
        return float(_result(trace).get("score") or 0.0)

    @vf.metric
    async def fix_verified(self, trace: vf.Trace) -> float:
        res = _result(trace)
        return 1.0 if res.get("passed") and res.get("scored") else 0.0

    @vf.metric
    async def steps_used(self, trace: vf.Trace) -> float:
        return float(_result(trace).get("steps") or 0)


def _result(trace: vf.Trace) -> dict[str, Any]:
    state = getattr(trace, "state", None)
    return dict(getattr(state, "result", None) or {})


class TriageTasksetConfig(vf.TasksetConfig):
    split: str = "test"
    """train, test or all: the variants of each family in that split."""
    tasks: str | None = None
    """Comma-separated families or family@N ids to keep (default: all of the split)."""
    task: TriageTaskConfig = TriageTaskConfig()


class TriageTaskset(vf.Taskset[TriageTask, TriageTasksetConfig]):
    """sandbox-env's task variants of one split, one task each."""

    def load(self) -> Iterator[TriageTask]:
        cfg, tc = self.config, self.config.task
        if cfg.split not in SPLITS:
            raise ValueError(f"split must be one of {', '.join(SPLITS)}, not {cfg.split!r}")
        for tid in task_ids(cfg.split, cfg.tasks, tc.task_root):
            # the prompts are the observation of a real reset (closed at once): what HTTP shows
            episode = HarnessEpisode(tc.mode, tc.url, tc.task_root)
            try:
                system, user = episode.start(tid)
            finally:
                episode.close()
            meta = task_metadata(tid, cfg.split, tc.task_root)
            spec = registry(tc.task_root).get(tid)
            yield TriageTask(TriageData(id=tid, name=tid, description=spec.title, prompt=user,
                                        system_prompt=system, **meta), tc)


def load_environment(split: str = "test", mode: str = "mock", *, tasks: str | None = None,
                     url: str | None = None, task_root: str | None = None,
                     harness: str = "null", runtime: str = "subprocess", **env: Any) -> vf.Env:
    """A verifiers ``Env`` over the variants of ``split``, episodes in ``mode`` (or at ``url``).

    ``harness`` is the agent program (default ``null``: a plain chat loop whose only tools are
    the five actions); ``runtime`` where it runs (default ``subprocess``: this machine). Other
    keyword arguments are fields of the env config (e.g. ``agent={"max_turns": 40}``).
    """
    agent = {"harness": {"id": harness}, "runtime": {"type": runtime}}
    agent.update(env.pop("agent", {}) or {})
    config = vf.SingleAgentEnvConfig.model_validate({
        "taskset": {"id": TASKSET_ID, "split": split, "tasks": tasks,
                    "task": {"mode": mode, "url": url, "task_root": task_root}},
        "agent": agent, **env})
    from verifiers.v1.utils.loaders import resolve_env_config

    return vf.load_environment(resolve_env_config(config.model_dump()))


__all__ = ["TASKSET_ID", "TriageTaskset", "load_environment"]

if typing.TYPE_CHECKING:  # the plugin's other public classes, for readers
    __all__ += ["TriageState", "TriageTask", "TriageToolset"]

if __name__ == "__main__":  # verifiers starts each rollout's tool server this way
    TriageToolset.run()
