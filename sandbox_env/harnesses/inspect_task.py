"""The Inspect task: sandbox-env's debugging families as an ``inspect-ai`` evaluation.

This module has one job: define ``sandbox_env_triage``, an Inspect ``@task`` whose samples are the
task variants of a split (``family@N``; task, family, variant and split as sample metadata), whose
solver plays one sandbox-env episode per sample with the five actions as Inspect tools (derived
from ``actions.ACTIONS``), and whose scorers read the hidden check's verdict: ``episode_score``
(the episode's terminal score; verdict outcome and reasons in the score's metadata) and
``fix_verified`` (1 when the hidden check passed the fix). Run it with Inspect's own CLI::

    inspect eval sandbox_env/harnesses/inspect_task.py --model openai/gpt-4.1 \\
        -T split=test -T mode=mock            # or mode=process / mode=docker, or -T url=http://...

The model sees what an HTTP agent sees (``harnesses.common``): the reset observation's
instructions as the system message, the incident report and the workspace listing as the user
message, each tool's observation text as the tool result. The episode ends at ``submit_fix`` or
when the step budget runs out; a reply without a tool call ends the sample too (Inspect's usual
tool loop), unscored as over HTTP. Imports are absolute: Inspect loads this file by path.
"""

from __future__ import annotations

from typing import Any

import anyio
from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageSystem, ChatMessageUser, execute_tools, get_model
from inspect_ai.scorer import Score, Target, mean, scorer, stderr
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import ToolDef, ToolParam, ToolParams

from sandbox_env.harnesses.common import TOOLS, HarnessEpisode, ToolSpec, registry, task_ids, task_metadata

RESULT_KEY = "sandbox_env_result"  # the episode's result in the sample's store (and score metadata)
_SCHEMA_KEYS = ("type", "description", "default", "anyOf", "enum", "items", "minLength", "maxLength")


def dataset(split: str = "test", tasks: list[str] | str | None = None,
            task_root: str | None = None) -> MemoryDataset:
    """One sample per task variant of ``split``: input = the incident report, id = ``family@N``."""
    samples = []
    for tid in task_ids(split, tasks, task_root):
        spec = registry(task_root).get(tid)
        samples.append(Sample(id=spec.address, input=spec.incident_report,
                              metadata=task_metadata(tid, split, task_root)))
    return MemoryDataset(samples, name=f"sandbox-env-{split}")


def _param(schema: dict[str, Any], description: str) -> ToolParam:
    kept = {k: v for k, v in schema.items() if k in _SCHEMA_KEYS}
    if "anyOf" in kept:
        kept["anyOf"] = [{k: v for k, v in s.items() if k in _SCHEMA_KEYS} for s in kept["anyOf"]]
    kept["description"] = description
    return ToolParam.model_validate(kept)


def _tool(episode: HarnessEpisode, spec: ToolSpec) -> ToolDef:
    """One action as an Inspect tool bound to this sample's episode (runs in a worker thread:
    a docker or process step may take minutes)."""

    async def execute(**arguments: Any) -> str:
        return await anyio.to_thread.run_sync(episode.act, spec.name, arguments)

    props = spec.parameters["properties"]
    params = ToolParams(properties={n: _param(s, spec.argument_description(n)) for n, s in props.items()},
                        required=list(spec.parameters["required"]))
    return ToolDef(execute, name=spec.name, description=spec.description, parameters=params,
                   parallel=False)


@solver
def triage_agent(mode: str = "mock", url: str | None = None, task_root: str | None = None) -> Solver:
    """Play one episode per sample: reset, then model turns and tool calls until it ends."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        episode = HarnessEpisode(mode, url, task_root)
        try:
            system, user = await anyio.to_thread.run_sync(episode.start, state.metadata["task"])
            state.messages = [ChatMessageSystem(content=system), ChatMessageUser(content=user)]
            tools = [_tool(episode, spec) for spec in TOOLS]
            state.tools = [t.as_tool() for t in tools]
            model = get_model()
            while not episode.done and not state.completed:
                state.output = await model.generate(state.messages, state.tools)
                state.messages.append(state.output.message)
                if not state.output.message.tool_calls:
                    break  # the model stopped acting: the episode ends unsubmitted
                result = await execute_tools(state.messages, state.tools)
                state.messages.extend(result.messages)
        finally:
            if episode.result is not None:  # for the scorers, and beside the sample's metadata
                state.store.set(RESULT_KEY, episode.result.as_dict())
                state.metadata[RESULT_KEY] = episode.result.as_dict()
            await anyio.to_thread.run_sync(episode.close)
        return state

    return solve


def _result(state: TaskState) -> dict[str, Any]:
    return state.store.get(RESULT_KEY) or {"done": False, "score": 0.0, "scored": False,
                                           "ended_by": "not_started"}


@scorer(metrics=[mean(), stderr()])
def episode_score() -> Any:
    """The episode's terminal score (0 when it never ended or the mock could not judge)."""

    async def score(state: TaskState, target: Target) -> Score:
        res = _result(state)
        reasons = res.get("reasons") or []
        explanation = (f"verdict {res.get('outcome')}: " + "; ".join(reasons) if res.get("outcome")
                       else f"no verdict ({res.get('ended_by')})")
        return Score(value=float(res.get("score") or 0.0), explanation=explanation, metadata=res)

    return score


@scorer(metrics=[mean(), stderr()])
def fix_verified() -> Any:
    """1 when the hidden check passed the submitted fix, else 0."""

    async def score(state: TaskState, target: Target) -> Score:
        res = _result(state)
        return Score(value=1.0 if res.get("passed") and res.get("scored") else 0.0,
                     answer=str(res.get("outcome")))

    return score


@task
def sandbox_env_triage(split: str = "test", mode: str = "mock", tasks: str | None = None,
                       url: str | None = None, task_root: str | None = None) -> Task:
    """sandbox-env's families as Inspect samples.

    Args:
        split: train, test or all (the variants of each family in that split).
        mode: where agent code runs in this process: mock (replays), process (bubblewrap) or
            docker; ignored when ``url`` is given.
        tasks: comma-separated families or ``family@N`` ids to keep (default: all of the split).
        url: a sandbox-env server to play the episodes on (its own mode applies).
        task_root: another task folder (default: the package's task_repos or $SANDBOX_ENV_TASK_ROOT).
    """
    return Task(dataset=dataset(split, tasks, task_root),
                solver=triage_agent(mode, url, task_root),
                scorer=[episode_score(), fix_verified()],
                metadata={"harness": "sandbox-env", "split": split, "mode": "server" if url else mode})


__all__ = ["RESULT_KEY", "dataset", "episode_score", "fix_verified", "sandbox_env_triage", "triage_agent"]
