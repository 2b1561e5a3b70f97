"""What the agent sees says only what a real run shows: no labelled state, behaviour label,
check path, production copy or deployment variable, and a variant speaks its own names.

Every labelled state of every family (variant 0, and each family's certified variants) is
played in mock mode through the environment: the run command, then a submit. Everything the
agent can read (each observation and GET /state, as JSON) is searched for what only the
project's own bookkeeping knows.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from sandbox_env.actions import parse_action
from sandbox_env.agent_view import agent_text, agent_verdict
from sandbox_env.environment import TriageEnvironment
from sandbox_env.models import Outcome, Verdict
from sandbox_env.sandbox.mock import MockSandbox
from sandbox_env.suite.tasks import TaskRegistry, TaskSpec
from sandbox_env.suite.variant_tasks import load_certified

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN = ("patch:", "/checks/", "SLURM_", "KUBERNETES_", "deployment_env", "check_kit", "kit_driver",
             "probe.py", ".patch")


@pytest.fixture(scope="module")
def registry() -> TaskRegistry:
    return TaskRegistry(ROOT / "task_repos")


@pytest.fixture(scope="module")
def sandbox() -> MockSandbox:
    return MockSandbox()


def _families(registry: TaskRegistry) -> list[str]:
    return sorted({registry.get(t).family for t in registry.ids()})


def _labels(task: TaskSpec) -> set[str]:
    """What only the project's bookkeeping knows of a state: patch names and behaviour labels."""
    out = {p.file.removesuffix(".patch") for p in task.patches}
    out |= {p.behaviour for p in task.patches if "_" in p.behaviour}
    return out


def _play(registry: TaskRegistry, sandbox: MockSandbox, address: str, patch: str | None) -> str:
    """One episode in the state ``patch`` (None: the original): what the agent reads besides
    the task's own texts (the incident report names the production paths, as a real one does)."""
    env = TriageEnvironment(registry, sandbox)
    public = {"task_description", "current_files"}
    seen = [env.reset(task=address).model_dump_json(exclude=public)]
    task = env.task
    assert task is not None and env.workspace is not None
    if patch == "solution":
        env.workspace.apply_patch(task.solution_patch)
    elif patch is not None:
        env.workspace.apply_patch(task.patch_text(next(p for p in task.patches if p.file == patch)))
    for action in ({"action_type": "execute_bash", "command": task.run_command},
                   {"action_type": "submit_fix", "explanation": "the graph is kept; no_grad"}):
        seen.append(env.step(parse_action(action)).model_dump_json(exclude=public))
    seen.append(env.state.model_dump_json())
    return "\n".join(seen)


def _assert_clean(text: str, task: TaskSpec, where: str) -> None:
    for word in FORBIDDEN:
        assert word not in text, (where, word, _around(text, word))
    assert task.verify.production_dir not in text, (where, _around(text, task.verify.production_dir))
    for label in _labels(task):
        assert not re.search(rf"\b{re.escape(label)}\b", text), (where, label, _around(text, label))


def _around(text: str, word: str) -> str:
    i = text.find(word)
    return text[max(0, i - 150): i + 150]


def test_no_label_check_detail_or_production_path_reaches_the_agent(registry: TaskRegistry,
                                                                   sandbox: MockSandbox) -> None:
    """Variant 0 of every family, every labelled state, in mock mode."""
    played = 0
    for family in _families(registry):
        task = registry.get(family)
        for state in [None, "solution", *(p.file for p in task.patches)]:
            _assert_clean(_play(registry, sandbox, family, state), task, f"{family} {state}")
            played += 1
    assert played >= 150


def _old_names(task: TaskSpec) -> set[str]:
    """Variant 0's names that this variant renamed (modules as file names too)."""
    assert task.variant is not None
    out = set(task.variant.renames)
    out |= set(task.variant.module_renames) | {f"{m}.py" for m in task.variant.module_renames}
    return out


def _words(text: str) -> set[str]:
    """The identifiers a text cites: distinctive names (an underscore or a capital), plain names
    called (``fit(``), module files (``config.py``); plain English words are not citations."""
    out = set(re.findall(r"(?<![\w.])([a-z_][a-z0-9_]*)\.[A-Z]", text))  # a module qualifying a class
    for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*(?:\.py\b|\()?", text):
        if w.endswith("("):
            out.add(w[:-1])
        elif w.endswith(".py") or "_" in w or not w.islower():
            out.add(w)
    return out


def test_every_certified_variant_speaks_its_own_names(registry: TaskRegistry, sandbox: MockSandbox) -> None:
    """Every text served with a certified variant (incident report, hints, repo files, run
    output, verdict reasons, judge notes) names no identifier or file of variant 0 that the
    variant renamed (unless the variant's own workspace has that word too)."""
    checked = 0
    for family in _families(registry):
        for cert in load_certified(registry.get(family).root):
            address = f"{family}@{cert.index}"
            task = registry.get(address)
            files = task.repo_files()  # a name is the variant's own if its code or file list has it
            own = set(files).union(*(_words(t) for p, t in files.items() if p.endswith(".py")))
            stale = _old_names(task) - own
            texts = {"incident_report": task.incident_report, "hints": "\n".join(task.hints),
                     **{f"repo {p}": t for p, t in files.items() if p.endswith(".py")}}
            states = [None, "solution", *[p.file for p in task.patches][:3]]
            for state in states:
                texts[f"episode {state}"] = _play(registry, sandbox, address, state)
            for where, text in texts.items():
                hits = sorted(stale & _words(text))
                assert not hits, (address, where, hits, _around(text, hits[0]) if hits else "")
                if where.startswith("episode"):
                    _assert_clean(text, task, f"{address} {where}")
            checked += 1
    assert checked >= 36


def test_every_certified_variant_readme_speaks_its_own_names(registry: TaskRegistry) -> None:
    stale_hits = []
    for family in _families(registry):
        for cert in load_certified(registry.get(family).root):
            task = registry.get(f"{family}@{cert.index}")
            files = task.repo_files()
            own = set(files).union(*(_words(t) for p, t in files.items() if p.endswith(".py")))
            stale = _old_names(task) - own
            for path, text in files.items():
                if not path.endswith(".py"):
                    stale_hits += [(task.id, path, w) for w in sorted(stale & _words(text))]
    assert not stale_hits, stale_hits[:5]


def test_agent_text_removes_where_and_how_the_check_ran(registry: TaskRegistry) -> None:
    task = registry.get("oom_graph_leak")
    prod = task.verify.production_dir
    reason = (f"`python train.py` exits 0 in the workspace and in {prod}\n"
              'Traceback (most recent call last):\n  File "/checks/.run/bin/probe.py", line 40, in install\n'
              "    hook()\n"
              f'  File "{prod}/train.py", line 12, in fit\n    loss = step()\n'
              "RuntimeError: boom (see /checks/.run/kit_driver.py)\n"
              "kit_driver: ProcessExitedException: process 2 terminated with signal SIGABRT")
    text = agent_text(reason, task)
    assert prod not in text and "/checks/" not in text and "probe.py" not in text and "kit_driver" not in text
    assert text.endswith("\nProcessExitedException: process 2 terminated with signal SIGABRT")
    assert text.startswith("`python train.py` exits 0 in the workspace\n")
    assert '  File "/workspace/train.py", line 12, in fit\n    loss = step()' in text
    full = Verdict(passed=False, outcome=Outcome.failed, reasons=[reason], source="mock:patch:x.patch",
                   evidence={"deployment_env": ["SLURM_JOB_ID"], "peak_rss_mb": 700.0})
    shown = agent_verdict(full, task)
    assert shown.evidence == {} and shown.source == "" and shown.reasons == [text]
    variant = registry.get("ddp_gradient_hang@6") if registry.get("ddp_gradient_hang@6").variant else None
    if variant is not None and "fit" not in variant.variant.renames:
        old = next(iter(variant.variant.renames))
        assert variant.variant.renames[old] in agent_text(f"{old}() differs", variant)


def test_instructions_state_the_conditions_of_the_episode(registry: TaskRegistry,
                                                          sandbox: MockSandbox) -> None:
    """Limits, the meaning of the status fields and, in mock mode, what it can run; the same
    conditions reach the TRL prompt and the baseline agent's first turn."""
    from sandbox_env.agent.prompts import intro_message
    from sandbox_env.instructions import conditions_of

    env = TriageEnvironment(registry, sandbox)
    obs = env.reset(task="oom_graph_leak")
    text = obs.instructions
    for needed in ("60 s of wall time", "killed", "2048 MB", "700 MB data segment", "processes/threads",
                   "no network", "run_status", "not_run", "system_status", "budget_remaining",
                   "mock mode", "python train.py", "without using a step"):
        assert needed in text, needed
    conditions = conditions_of(text)
    assert conditions and conditions in intro_message(obs, None, 4000)


def test_a_command_the_mock_cannot_answer_spends_no_step(registry: TaskRegistry,
                                                         sandbox: MockSandbox) -> None:
    env = TriageEnvironment(registry, sandbox)
    env.reset(task="oom_graph_leak")
    for command in ("cat train.py | head -3", "pip list", "ls > files.txt", "cat train.py; pwd"):
        obs = env.step(parse_action({"action_type": "execute_bash", "command": command}))
        assert obs.step_number == 0 and obs.budget_remaining == obs.max_steps, command
        assert "did not use a step" in obs.terminal_output and "no such file" not in obs.terminal_output
        assert obs.system_status == "command_unavailable" and obs.last_action_error
    assert env.state.actions_taken == []
    obs = env.step(parse_action({"action_type": "execute_bash", "command": "cat train.py"}))
    assert obs.step_number == 1 and "def " in obs.terminal_output  # a builtin it can answer


def test_over_http_the_agent_sees_the_same(tmp_path: Path) -> None:
    """The HTTP face: no step for a refused command; a verdict without evidence or source."""
    import httpx

    from .conftest import start_server

    proc, url = start_server(ROOT / "task_repos", "mock")
    try:
        eid = httpx.post(url + "/reset", json={"task": "ddp_gradient_hang"}).json()["episode_id"]
        r = httpx.post(url + "/step", json={"action_type": "execute_bash", "command": "cat train.py | head",
                                            "episode_id": eid}).json()
        assert r["observation"]["budget_remaining"] == r["observation"]["max_steps"]
        r = httpx.post(url + "/step", json={"action_type": "submit_fix", "explanation": "x",
                                            "episode_id": eid}).json()
        verdict = r["observation"]["verdict"]
        assert verdict["evidence"] == {} and verdict["source"] == "" and not verdict["passed"]
        assert "/srv/" not in json.dumps(r) and "patch" not in json.dumps(r)
        state = httpx.get(url + "/state", params={"episode_id": eid}).json()
        assert state["verdict"] == verdict
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_a_blind_id_serves_the_variant_without_naming_its_family(registry: TaskRegistry,
                                                                 sandbox: MockSandbox) -> None:
    """A family's name often says what the bug is: a reset by its blind id shows only that id."""
    blind = registry.blind_id("oom_graph_leak@0")
    assert blind.startswith("incident-") and registry.unblind(blind) == "oom_graph_leak@0"
    env = TriageEnvironment(registry, sandbox)
    obs = env.reset(task=blind)
    assert obs.task_name == blind and env.task is not None and env.task.family == "oom_graph_leak"
    state = env.state.model_dump_json()
    assert "oom" not in state and "graph_leak" not in state
    assert "oom_graph_leak" not in obs.model_dump_json(exclude={"task_description", "current_files"})
    with pytest.raises(Exception, match="incident-0000"):
        registry.get("incident-0000000000")
