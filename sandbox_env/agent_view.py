"""What the agent may see of a verdict: what failed, with its numbers, in the variant's own
names; never where or how the check ran.

A verification runs the submitted code from a copy of the project elsewhere, with a deployment
environment of its own, through driver files the agent never sees. Every such detail in a
verdict shown to the agent (the copy's path, the variables the check sets, a traceback frame of
a check file, a mock recording's state name) would teach a policy, over thousands of verdicts,
how to tell a verification from its own runs. So the agent gets the reasons with those details
written out, and no evidence or source; operators keep the whole verdict (eval records, logs).
Texts written once for variant 0 (a check's sentence naming ``fit()``) speak the variant's
names here.
"""

from __future__ import annotations

import re

from .models import Verdict
from .suite.tasks import TaskSpec
from .suite.variants import renamer_of

WORKSPACE = "/workspace"
# a traceback frame of a file the check brought (and the source line printed under it)
_CHECK_FRAME = re.compile(r'^[ \t#]*File "/checks/[^"]*".*\n(?:[ \t#]+(?!File ")\S.*\n)?', re.MULTILINE)
_CHECK_PATH = re.compile(r"/checks/[^\s\"':,)]*")


def agent_text(text: str, task: TaskSpec) -> str:
    """``text`` as the agent may read it (a verdict reason, a judge's note)."""
    prod = task.verify.production_dir if task.verify is not None else None
    if prod:
        text = re.sub(rf" and in {re.escape(prod)}(?=[\s.,;:)]|$)", "", text)
        text = re.sub(rf"{re.escape(prod)}(?=[/\s\"'.,;:)]|$)", WORKSPACE, text)
    text = _CHECK_FRAME.sub("", text if text.endswith("\n") else text + "\n").removesuffix("\n")
    text = _CHECK_PATH.sub("<internal>", text)
    if task.variant is not None:
        text = renamer_of(task.variant).prose(text)
    return text


def agent_verdict(verdict: Verdict, task: TaskSpec) -> Verdict:
    """The verdict the agent is shown: outcome and reasons, no evidence, no source."""
    return Verdict(passed=verdict.passed, outcome=verdict.outcome,
                   reasons=[agent_text(r, task) for r in verdict.reasons],
                   duration_s=verdict.duration_s, provenance=verdict.provenance)
