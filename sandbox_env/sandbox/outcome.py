"""What one command did, in one place for every backend: the output cap, OOM, the outcome.

A backend measures facts (exit status, whether its timer fired, whether its memory limit
killed the command, the raw output) and hands them to ``run_result``, which caps and
annotates the output and classifies the outcome the same way in every mode.
"""

from __future__ import annotations

from ..kit.child_process import OutputCap
from ..models import Outcome, RunResult

# Text an allocator or interpreter prints when RLIMIT_DATA (or the host) refuses memory.
OOM_MARKERS = ("can't allocate memory", "Cannot allocate memory", "MemoryError")
OOM_NOTE = "killed by the container's memory limit (OOM)"


def cap_output(data: bytes, limit: int) -> str:
    """Decode output, keeping head and tail with a clear marker when over ``limit`` bytes."""
    cap = OutputCap(limit)
    cap.feed(data)
    return cap.text()


def classify_run(exit_code: int | None, timed_out: bool, oom_killed: bool, output: str) -> Outcome:
    """Outcome of one command from facts: the timer, the OOM flag, the exit status."""
    if timed_out:
        return Outcome.timeout
    if oom_killed or (exit_code not in (0, None) and any(m in output for m in OOM_MARKERS)):
        return Outcome.oom_killed
    if exit_code == 0:
        return Outcome.passed
    return Outcome.failed


def run_result(command: str, output: str, *, exit_code: int | None, timed_out: bool,
               duration_s: float, source: str, oom_killed: bool = False,
               changed_files: dict[str, str] | None = None, notes: list[str] | None = None) -> RunResult:
    """The RunResult of one command: ``output`` (already capped) plus the sandbox's notes."""
    text = output
    if oom_killed:
        text += f"\n[sandbox] {OOM_NOTE}"
    if notes:
        text += "\n" + "\n".join(f"[sandbox] {n}" for n in notes)
    return RunResult(command=command, output=text, exit_code=exit_code,
                     outcome=classify_run(exit_code, timed_out, oom_killed, text),
                     duration_s=round(duration_s, 3), changed_files=changed_files or {}, source=source)


def infra_run(command: str, why: str, source: str) -> RunResult:
    """A run the sandbox could not carry out (never the agent's doing, never scored)."""
    return RunResult(command=command, output=why, exit_code=None, outcome=Outcome.infra_error,
                     duration_s=0.0, source=source)
