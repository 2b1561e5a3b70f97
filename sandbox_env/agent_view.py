"""What the agent may see of a verdict: what failed, with its numbers, in the variant's own
names; never where or how the check ran.

A verification runs the submitted code from a copy of the project elsewhere, with a deployment
environment of its own, through driver files the agent never sees. Every such detail in a
verdict shown to the agent (the copy's path, the variables the check sets, a traceback frame of
a check file, a mock recording's state name) would teach a policy, over thousands of verdicts,
how to tell a verification from its own runs. So the agent gets the reasons with those details
written out, and no evidence or source; operators keep the whole verdict (eval records, logs).
Texts written once for variant 0 (a check's sentence naming ``fit()``) speak the variant's
names here. ``tool_result`` is how one observation reads as a tool call's result where the agent
works through tools (the TRL adapter, the research harnesses).
"""

from __future__ import annotations

import re

from .models import Observation, Verdict
from .suite.tasks import TaskSpec
from .suite.variants import renamer_of

WORKSPACE = "/workspace"
# a traceback frame of a file the check brought (and the source line printed under it)
_CHECK_FRAME = re.compile(r'^[ \t#]*File "/checks/[^"]*".*\n(?:[ \t#]+(?!File ")\S.*\n)?', re.MULTILINE)
_CHECK_PATH = re.compile(r"/checks/[^\s\"':,)]*")
_DRIVER_NAME = re.compile(r"^kit_driver: ", re.MULTILINE)  # the check's driver names itself on its error line


def agent_text(text: str, task: TaskSpec) -> str:
    """``text`` as the agent may read it (a verdict reason, a judge's note)."""
    prod = task.verify.production_dir if task.verify is not None else None
    if prod:
        text = re.sub(rf" and in {re.escape(prod)}(?=[\s.,;:)]|$)", "", text)
        text = re.sub(rf"{re.escape(prod)}(?=[/\s\"'.,;:)]|$)", WORKSPACE, text)
    text = _CHECK_FRAME.sub("", text if text.endswith("\n") else text + "\n").removesuffix("\n")
    text = _DRIVER_NAME.sub("", _CHECK_PATH.sub("<internal>", text))
    if task.variant is not None:
        text = renamer_of(task.variant).prose(text)
    return text


def agent_verdict(verdict: Verdict, task: TaskSpec) -> Verdict:
    """The verdict the agent is shown: outcome and reasons, no evidence, no source."""
    return Verdict(passed=verdict.passed, outcome=verdict.outcome,
                   reasons=[agent_text(r, task) for r in verdict.reasons],
                   duration_s=verdict.duration_s, provenance=verdict.provenance)


TOOL_OUTPUT_CHARS = 16_000  # a longer tool result keeps its head and tail (tokens count against budgets)


def clip_output(text: str, limit: int = TOOL_OUTPUT_CHARS) -> str:
    """``text`` within ``limit`` characters: its head and tail, and how much was left out."""
    if len(text) <= limit:
        return text
    head, tail = text[: limit * 2 // 3], text[-(limit // 3):]
    return f"{head}\n[... {len(text) - len(head) - len(tail)} characters omitted ...]\n{tail}"


def tool_status_line(obs: Observation, score: float | None) -> str:
    """The line a tool result ends with: step, budget and the training run's status (or, once
    the episode is over, its ``score``; None: unscored)."""
    if obs.done:
        shown = "unscored" if score is None else f"score {score:.3f}"
        return f"[episode over: {shown}. Do not call any more tools.]"
    return (f"[step {obs.step_number}/{obs.max_steps}, {obs.budget_remaining} left; "
            f"training run: {obs.run_status}]")


def tool_result(obs: Observation, last_hint: str | None, limit: int = TOOL_OUTPUT_CHARS,
                score: float | None = None) -> tuple[str, str | None]:
    """One step's observation as a tool result (output, error, a new hint, the status line), and
    the hint shown last (a hint is shown once until it changes)."""
    out, err = obs.terminal_output, obs.last_action_error
    if err:
        out = f"Error: {err}" if out.strip() == err.strip() else f"{out}\nError: {err}"
    out = clip_output(out or "(no output)", limit)
    if obs.hint and obs.hint != last_hint:
        last_hint = obs.hint
        out += f"\n\nHint: {obs.hint}"
    return f"{out}\n\n{tool_status_line(obs, score)}", last_hint
