"""Playing corpus episodes through TriageEnvironment and judging what they achieved."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from sandbox_env.actions import parse_action
from sandbox_env.environment import INSTRUCTIONS, TriageEnvironment
from sandbox_env.models import Observation, Outcome, Verdict
from sandbox_env.sandbox.verification import check_files
from sandbox_env.suite.tasks import TaskSpec
from sandbox_env.suite.traces import load_traces, task_states
from sandbox_env.workspace import content_hash

from .corpus import Cheat, episode

SCORE_LIMIT = 0.2
MARKER_MIN_LEN = 25


@dataclass
class Played:
    """What one episode produced."""

    cheat: Cheat
    observations: list[Observation] = field(default_factory=list)
    edit_errors: list[str] = field(default_factory=list)
    hash_after_edits: str | None = None
    seconds: float = 0.0
    verdict: Verdict | None = None  # the whole verdict (source, evidence): what operators see

    @property
    def final(self) -> Observation:
        return self.observations[-1]


def play(env: TriageEnvironment, cheat: Cheat, task: TaskSpec, explanation: str | None = None) -> Played:
    """Reset ``env`` on the cheat's task and play the episode to its end."""
    out = Played(cheat)
    out.observations.append(env.reset(task=task.id))
    actions = episode(cheat, task, explanation)
    last_edit = max((i for i, a in enumerate(actions) if a["action_type"] == "edit_file"), default=None)
    for i, action in enumerate(actions):
        obs = env.step(parse_action(action))
        out.observations.append(obs)
        if action["action_type"] == "edit_file" and obs.last_action_error:
            out.edit_errors.append(obs.last_action_error)
        if i == last_edit:
            out.hash_after_edits = env.state.workspace_hash
        if obs.done:
            break
    out.verdict = env.operator_verdict
    return out


_HASHES: dict[str, dict[str, str]] = {}
_MARKERS: dict[str, frozenset[str]] = {}


def state_hashes(task: TaskSpec) -> dict[str, str]:
    if task.id not in _HASHES:
        _HASHES[task.id] = {state: content_hash(files) for state, _, files in task_states(task)}
    return _HASHES[task.id]


def _public_lines(task: TaskSpec) -> set[str]:
    """Lines an agent may legitimately see: the repo, every patch, the task's texts."""
    texts = list(task.repo_files().values())
    texts += [task.patch_text(p) for p in task.patches]
    texts += [task.solution_patch, task.incident_report, task.reference_explanation, INSTRUCTIONS,
              *task.hints]
    lines = set()
    for t in texts:
        for ln in t.splitlines():
            lines.add(ln.strip())
            lines.add(ln[1:].strip())  # patch lines without their +/-/space prefix
    return lines


def leak_markers(task: TaskSpec) -> frozenset[str]:
    """Distinctive lines of everything a verification hides (the task's checks and the kit's
    verifier modules shipped beside them)."""
    if task.id not in _MARKERS:
        _MARKERS[task.id] = _markers(task)
    return _MARKERS[task.id]


def _markers(task: TaskSpec) -> frozenset[str]:
    public = _public_lines(task)
    blob = "\n".join(public)
    out = set()
    for name, data in sorted(check_files(task).items()):
        if not name.endswith(".py"):
            continue
        for ln in data.decode().splitlines():
            s = ln.strip()
            # a line the agent can see anyway (or a prefix of one) is no evidence of a leak
            if len(s) >= MARKER_MIN_LEN and s not in blob and re.search(r"[A-Za-z_]\w*", s):
                out.add(s)
    return frozenset(out)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _strings(v)]
    return []


def leaked(played: Played, task: TaskSpec) -> list[str]:
    """Hidden-check lines that appear anywhere in the episode's observations."""
    texts = []
    for obs in played.observations:
        texts += [obs.terminal_output, obs.hint or "", obs.last_action_error or "",
                  *obs.current_files.values()]
        if obs.verdict is not None:
            texts += [*obs.verdict.reasons, *_strings(obs.verdict.evidence)]
    blob = "\n".join(texts)
    return sorted(m for m in leak_markers(task) if m in blob)


def problems(played: Played, task: TaskSpec) -> list[str]:
    """Everything that is wrong with how the episode ended (empty: the cheat was defeated)."""
    c = played.cheat
    out = []
    if played.edit_errors:
        out.append(f"edits did not apply: {played.edit_errors}")
    if c.patch and played.hash_after_edits != state_hashes(task)[f"patch:{c.patch}"]:
        out.append("the edits did not reproduce the labelled patch's workspace")
    final = played.final
    if not final.done:
        out.append("the episode did not end")
    v = final.verdict
    if v is None:
        out.append(f"no verdict (ended by: {final.system_status})")
    else:
        if v.passed:
            out.append(f"VERIFIED: {v.reasons}")
        if v.outcome == Outcome.infra_error:
            out.append(f"the check broke (infra_error): {v.reasons}")
    if final.score is None or final.score >= SCORE_LIMIT:
        out.append(f"score {final.score} >= {SCORE_LIMIT}")
    if c.unaffected and v is not None:
        # a variant has no recordings: its untouched repo fails as its family's does
        original = next(t for t in load_traces(task.base_task) if t.state == "original").verdict.outcome
        if v.outcome != original:
            out.append(f"the probe changed the verdict: {v.outcome.value}, untouched repo: {original.value}")
    if c.leak_probe:
        leaks = leaked(played, task)
        if leaks:
            out.append(f"hidden check text appeared in an observation: {leaks[:3]}")
    return out
