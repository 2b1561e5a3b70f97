"""The Inspect task (sandbox_env/harnesses/inspect_task.py) run by inspect-ai itself, unmodified.

inspect-ai 0.3.285 runs from its own venv (``scripts/harness-venvs.sh`` builds ``.venvs/inspect``),
as a subprocess: Inspect's ``eval()`` loads the task from its file path (as ``inspect eval PATH``
does) and plays it with Inspect's scripted model, ``mockllm/model`` with custom outputs (each a
tool call, given token usage so that no tokenizer is downloaded: the run is offline). The oracle's
actions verify the seed task's test variant; a labelled wrong fix is rejected; the log is read
back with Inspect's own reader (``read_eval_log``). The model's view is compared with what an
HTTP agent sees: the reset observation's instructions, incident report and tool results. Under
CI a missing venv fails the test; elsewhere it skips.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from sandbox_env.actions import ACTION_TYPES
from sandbox_env.environment import LocalEpisode, TriageEnvironment
from sandbox_env.sandbox import make_sandbox
from sandbox_env.suite.oracle import oracle_actions, patch_to_edits
from sandbox_env.suite.tasks import TaskRegistry

from .conftest import ROOT

TASK = "oom_graph_leak@6"  # the seed family's first test variant
WRONG = "wrong_validation_only.patch"
TASK_FILE = "sandbox_env/harnesses/inspect_task.py"  # relative to the checkout, as in docs/harnesses.md

PLAYER = textwrap.dedent('''
    """Run the Inspect task through Inspect's eval() with scripted mockllm outputs; report the logs."""
    import json, sys, time
    from inspect_ai import eval as inspect_eval
    from inspect_ai.log import read_eval_log
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    plan = json.load(sys.stdin)
    reports = []
    for run in plan["runs"]:
        outputs = []
        for action in run["actions"]:
            args = {k: v for k, v in action.items() if k != "action_type"}
            out = ModelOutput.for_tool_call("mockllm/model", action["action_type"], args)
            out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
            outputs.append(out)
        model = get_model("mockllm/model", custom_outputs=outputs, memoize=False)
        start = time.monotonic()
        logs = inspect_eval(plan["task_file"], model=model, log_dir=plan["log_dir"], display="none",
                            task_args={"split": "test", "mode": plan["mode"], "tasks": run["task"]})
        log = read_eval_log(logs[0].location)  # Inspect's own reader, from the file
        sample = log.samples[0]
        tools = [[t.name for t in e.tools] for e in sample.events if e.event == "model"]
        reports.append({
            "seconds": round(time.monotonic() - start, 1), "location": logs[0].location,
            "status": log.status, "error": str(log.error) if log.error else None,
            "sample_id": sample.id, "metadata": sample.metadata,
            "scores": {k: {"value": s.value, "answer": s.answer, "explanation": s.explanation,
                           "metadata": s.metadata} for k, s in (sample.scores or {}).items()},
            "metrics": {s.name: {m: v.value for m, v in s.metrics.items()} for s in log.results.scores},
            "messages": [{"role": m.role, "text": m.text,
                          "tool": getattr(m, "function", None)} for m in sample.messages],
            "tools": tools,
        })
    print(json.dumps(reports))
''')


def harness_python(venv: str) -> Path:
    """The interpreter of a harness venv under .venvs/ (skip, or fail under CI, when missing)."""
    python = ROOT / ".venvs" / venv / "bin" / "python"
    if not python.exists():
        msg = f"harness venv .venvs/{venv} is missing: run scripts/harness-venvs.sh {venv}"
        if os.environ.get("CI") == "true":
            pytest.fail(msg)
        pytest.skip(msg)
    return python


def play(runs: list[dict[str, Any]], tmp_path: Path, mode: str = "mock", timeout: float = 600) -> list[dict]:
    python = harness_python("inspect")
    plan = {"runs": runs, "mode": mode, "task_file": TASK_FILE, "log_dir": str(tmp_path / "logs")}
    env = {**os.environ, "INSPECT_LOG_LEVEL": "warning", "NO_COLOR": "1"}
    env.pop("SANDBOX_ENV_JUDGE_MODEL", None)
    proc = subprocess.run([str(python), "-c", PLAYER], input=json.dumps(plan), check=False,
                          capture_output=True,
                          text=True, timeout=timeout, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def wrong_fix(task_id: str, real_tasks: TaskRegistry) -> list[dict[str, Any]]:
    spec = real_tasks.get(task_id)
    patch = next(p for p in spec.patches if p.file == WRONG and p.label == "wrong")
    return [{"action_type": "execute_bash", "command": spec.run_command},
            *patch_to_edits(spec.repo_files(), spec.patch_text(patch)),
            {"action_type": "submit_fix", "explanation": "Validation loss retained the graph."}]


def http_view(task_id: str, real_tasks: TaskRegistry, actions: list[dict[str, Any]]) -> tuple[Any, list[str]]:
    """What an HTTP agent sees for these actions: the reset observation and each step's output."""
    sandbox = make_sandbox("mock")
    try:
        ep = LocalEpisode(TriageEnvironment(TaskRegistry(ROOT / "task_repos"), sandbox))
        first = ep.reset(task=task_id, compact=True).observation
        outs = [ep.step(a).observation.terminal_output for a in actions]
    finally:
        sandbox.close()
    return first, outs


def test_inspect_scripted_model_verifies_the_oracle_and_rejects_a_wrong_fix(
        tmp_path: Path, real_tasks: TaskRegistry) -> None:
    oracle = oracle_actions(real_tasks.get(TASK))
    wrong = wrong_fix(TASK, real_tasks)
    start = time.monotonic()
    good, bad = play([{"task": TASK, "actions": oracle}, {"task": TASK, "actions": wrong}], tmp_path)
    print(f"inspect: oracle {good['seconds']} s, wrong fix {bad['seconds']} s, "
          f"whole subprocess {time.monotonic() - start:.1f} s")

    for report in (good, bad):
        assert report["status"] == "success", report["error"]
        assert report["sample_id"] == TASK
        meta = report["metadata"]
        assert {k: meta[k] for k in ("task", "family", "variant", "split")} == {
            "task": TASK, "family": "oom_graph_leak", "variant": 6, "split": "test"}
        # the five actions, and only them, are the model's tools on every turn
        assert report["tools"] and all(sorted(t) == sorted(ACTION_TYPES) for t in report["tools"])
        assert Path(report["location"]).exists()

    g = good["scores"]
    assert g["fix_verified"]["value"] == 1.0
    assert g["episode_score"]["value"] >= 0.6
    assert g["episode_score"]["metadata"]["outcome"] == "passed"
    assert g["episode_score"]["metadata"]["ended_by"] == "submit_fix"
    assert g["episode_score"]["metadata"]["reasons"]
    assert good["metadata"]["sandbox_env_result"]["passed"] is True
    assert good["metrics"]["episode_score"]["mean"] >= 0.6

    b = bad["scores"]
    assert b["fix_verified"]["value"] == 0.0
    assert b["episode_score"]["value"] < 0.2
    assert b["episode_score"]["metadata"]["passed"] is False  # the wrong fix still runs out of memory
    assert b["episode_score"]["metadata"]["reasons"]

    # the model saw what an HTTP agent sees: the same instructions, incident, tool outputs
    first, outs = http_view(TASK, real_tasks, oracle)
    msgs = good["messages"]
    assert msgs[0]["role"] == "system" and msgs[0]["text"] == first.instructions
    assert msgs[1]["role"] == "user" and msgs[1]["text"].startswith(first.task_description.strip())
    assert first.terminal_output.strip() in msgs[1]["text"]
    tool_msgs = [m for m in msgs if m["role"] == "tool"]
    assert [m["tool"] for m in tool_msgs] == [a["action_type"] for a in oracle]
    for seen, http in zip(tool_msgs, outs, strict=True):
        assert seen["text"].startswith(http.strip()[:2000] if len(http) < 16_000 else http[:2000])
    spec, shown = real_tasks.get(TASK), "\n".join(m["text"] for m in msgs if m["role"] != "assistant")
    for secret in ("solution.patch", spec.reference_explanation, *(p.file for p in spec.patches)):
        assert secret not in shown  # no labels, no reference fix, no check internals


@pytest.mark.docker
def test_inspect_oracle_in_docker_mode(tmp_path: Path, real_tasks: TaskRegistry) -> None:
    """The same task argument in docker mode: real runs and a real verification of the oracle."""
    from .test_readme import docker_ready

    why = docker_ready()
    if why:
        pytest.skip(why)
    harness_python("inspect")
    oracle = oracle_actions(real_tasks.get(TASK))
    (good,) = play([{"task": TASK, "actions": oracle}], tmp_path, mode="docker", timeout=1200)
    print(f"inspect docker: oracle {good['seconds']} s")
    assert good["status"] == "success", good["error"]
    s = good["scores"]["episode_score"]
    assert s["metadata"]["outcome"] == "passed" and s["metadata"]["provenance"] == "measured", s
    assert s["value"] >= 0.6 and good["scores"]["fix_verified"]["value"] == 1.0
