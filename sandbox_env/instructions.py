"""What the agent is told when an episode starts: the job, the actions, and the conditions of
this episode (the limits every command runs under, what the status fields mean, what a mode that
cannot run everything can run). Every face sends the same text: HTTP, /ws and MCP as the
observation's ``instructions``; the TRL adapter and the baseline agent put the conditions
(:func:`conditions_of`) into their first prompt."""

from __future__ import annotations

from .actions import examples_text
from .rubrics import SHAPING_CAP
from .suite.tasks import TaskSpec

INSTRUCTIONS = f"""\
You are the on-call ML infrastructure engineer. A training job is failing; the incident
report is in task_description. Reproduce the failure, find the root cause in the code, fix it
with minimal, correct edits, and submit an explanation.

Actions (JSON, one per step):
{examples_text("  ")}

Your fix is verified by hidden behavioural checks that really run the code with their own
settings: it must be correct, not just make the error disappear. Workarounds that hide the
failure (catching exceptions, exiting early, shrinking the workload, raising timeouts,
disabling the feature) are rejected. The explanation is scored only for a verified fix."""


CONDITIONS_HEAD = "Conditions of this episode:\n"


def conditions_of(instructions: str) -> str:
    """The episode's own part of an observation's ``instructions`` (empty after reset)."""
    _, head, rest = instructions.partition(CONDITIONS_HEAD)
    return (head + rest).strip()


def episode_instructions(task: TaskSpec, answerable: list[str] | None = None) -> str:
    """INSTRUCTIONS plus what applies to this episode: the limits every command runs under,
    what the status fields mean, and in a mode that cannot run everything, what it can run."""
    lim = task.limits
    memory = f"{lim.memory_mb} MB of memory"
    if lim.data_mb:
        memory += f" ({lim.data_mb} MB data segment per process)"
    kept = (" Files a command writes are kept in the workspace for the next commands; binary ones "
            "(checkpoints, arrays) up to 16 MB each and 32 MB in all, and they are no part of the "
            "submitted fix." if answerable is None else "")
    text = (f"{INSTRUCTIONS}\n\n{CONDITIONS_HEAD}"
            f"Every command runs in a fresh sandbox with your workspace at /workspace, under these "
            f"limits: {lim.timeout_s:.0f} s of wall time (then it is killed and reported as a "
            f"timeout), {memory}, {lim.cpus:g} CPU, {lim.pids} processes/threads, no network.{kept}\n"
            f"Fields: run_status is the result of the last run of exactly `{task.run_command}` (not_run "
            "until you run it, then failing or passing; other commands, including a pipeline or a "
            "compound command around it, do not change it), or after a submit the verdict "
            "(passing, failing, or unknown if this mode cannot tell); system_status says what the "
            "last step did; budget_remaining counts the steps left (every action uses one; the "
            "episode ends when it reaches 0); hint appears after repeated failing runs; reward is a "
            "small step reward (a first reproduction, a first edit, a passing run after an edit: "
            f"{SHAPING_CAP:g} in all at most), the score comes from the verdict and the explanation.")
    if answerable is not None:
        text += ("\nThis episode runs in mock mode: commands are answered from runs recorded for real "
                 f"earlier. It answers: {'; '.join(answerable)}. Any other command is refused "
                 "without using a step.")
    return text
