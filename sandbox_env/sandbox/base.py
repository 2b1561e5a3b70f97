"""The Sandbox interface (where commands run) and the helpers every real sandbox shares."""

from __future__ import annotations

import json
import re
import secrets
from typing import Protocol, runtime_checkable

from ..checkkit import parse_verdict
from ..models import Limits, Outcome, RunResult, Verdict
from ..tasks import TaskSpec
from ..workspace import Workspace

OOM_MARKERS = ("can't allocate memory", "Cannot allocate memory", "MemoryError")


class SandboxUnavailable(RuntimeError):
    """The sandbox cannot run anything (engine down, image missing); never the agent's fault."""


@runtime_checkable
class Sandbox(Protocol):
    """Where commands run. Docker, local and mock implement it; the environment knows no other."""

    mode: str

    def run(self, workspace: Workspace, command: str, limits: Limits, task: TaskSpec) -> RunResult:
        """Run ``command`` in a copy of ``workspace``; changed files are applied back to it."""
        ...

    def verify(self, workspace: Workspace, task: TaskSpec) -> Verdict:
        """Judge ``workspace`` with the task's hidden checks, in a fresh environment."""
        ...

    def close(self) -> None: ...


def normalise_command(command: str) -> str:
    """`cd . && python3  train.py` -> `python train.py`; used to match recorded commands."""
    cmd = " ".join(command.strip().split())
    cmd = re.sub(r"^(cd\s+(\.|/workspace|~/workspace)\s*(&&|;)\s*)+", "", cmd)
    cmd = re.sub(r"^(timeout\s+\d+[smh]?\s+)", "", cmd)
    cmd = re.sub(r"\bpython3(\.\d+)?\b", "python", cmd)
    cmd = re.sub(r"^python -u\b", "python", cmd)
    return cmd.removesuffix(" 2>&1")


def classify_run(exit_code: int | None, timed_out: bool, oom_killed: bool, output: str) -> Outcome:
    """Outcome of one command from facts: the timer, the OOM flag, the exit status."""
    if timed_out:
        return Outcome.timeout
    if oom_killed or (exit_code not in (0, None) and any(m in output for m in OOM_MARKERS)):
        return Outcome.oom_killed
    if exit_code == 0:
        return Outcome.passed
    return Outcome.failed


def _text(data: bytes) -> str:
    """Bytes as text an agent can read: invalid UTF-8 and NUL bytes become U+FFFD."""
    return data.decode(errors="replace").replace("\x00", "\ufffd")


def cap_output(data: bytes, limit: int) -> str:
    """Decode output, keeping head and tail with a clear marker when over ``limit`` bytes."""
    if len(data) <= limit:
        return _text(data)
    half = limit // 2
    dropped = len(data) - 2 * half
    return (
        _text(data[:half])
        + f"\n\n[... output truncated: {dropped} bytes omitted ...]\n\n"
        + _text(data[-half:])
    )


def new_nonce() -> str:
    return secrets.token_hex(16)


def verdict_from_check(stdout: str, nonce: str, *, exit_code: int | None, duration_s: float,
                       source: str, timed_out: bool = False) -> Verdict:
    """Turn a check's stdout into a Verdict; anything unparseable is an infra error."""
    if timed_out:
        return Verdict(passed=False, outcome=Outcome.infra_error, duration_s=duration_s,
                       source=source, reasons=["the hidden check exceeded its time budget"])
    data = parse_verdict(stdout, nonce)
    if data is None:
        tail = "\n".join(stdout.strip().splitlines()[-20:])
        return Verdict(passed=False, outcome=Outcome.infra_error, duration_s=duration_s,
                       source=source,
                       reasons=[f"the hidden check produced no verdict (exit {exit_code})", tail])
    try:
        verdict = Verdict.model_validate({**data, "duration_s": duration_s, "source": source})
    except ValueError as exc:
        return Verdict(passed=False, outcome=Outcome.infra_error, duration_s=duration_s,
                       source=source, reasons=[f"malformed verdict: {exc}"])
    if verdict.passed != (verdict.outcome == Outcome.passed):
        verdict.passed = False
        verdict.outcome = Outcome.infra_error
        verdict.reasons.append("inconsistent verdict: " + json.dumps(data)[:200])
    return verdict
