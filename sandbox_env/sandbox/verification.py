"""The host's side of the check protocol, shared by every real backend.

What a hidden check is given (its files and the check runtime beside it, a fresh nonce on
stdin, a time budget) and how its stdout becomes a Verdict: only the line carrying the
nonce counts, anything else is an infrastructure error, never a verdict about the agent.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..kit.verdict_protocol import parse_verdict
from ..models import Outcome, Verdict
from ..suite.tasks import TaskSpec, check_files, verify_data  # noqa: F401  (check_files: re-exported)
from .reference_bank import ReferenceBank

CHECK_BUDGET_S = 600.0  # wall time of one verification
CHECK_OUTPUT_CAP = 4_000_000  # bytes of a check's stdout kept for parsing


def check_env(run_env: dict[str, str], scratch: str) -> dict[str, str]:
    """A check's environment in any sandbox: the agent's run environment ``run_env`` (which the
    check passes on to agent code unchanged, ``SANDBOX_CHILD_ENV=inherit``), where the check
    keeps its scratch (out of agent code's reach, not /tmp) and the dirs it empties before each
    agent run."""
    return {**run_env, "SANDBOX_CHILD_ENV": "inherit", "SANDBOX_CHECK_SCRATCH": scratch,
            "SANDBOX_FRESH_DIRS": "/tmp:/dev/shm"}


def new_nonce() -> str:
    return secrets.token_hex(16)


class CheckInputs:
    """What one verification's check is given: ``check_files(task)``; where the sandbox keeps
    a reference bank, this verification's draw (``draw.json``); where the episode's own last run
    of the task's command exited 0 on exactly the submitted files (``ran_s``, its seconds), that
    run (``episode.json``), which stands for the check's run from the workspace. ``verdict``
    reads the check's answer and hands a live reference run's results back to the bank."""

    def __init__(self, task: TaskSpec, bank: ReferenceBank | None = None, ran_s: float | None = None) -> None:
        self.files = check_files(task)
        self.bank = bank
        self.draw = bank.take(self.files) if bank is not None else None
        if self.draw is not None:
            self.files["draw.json"] = self.draw.file()
        if ran_s is not None:
            self.files["episode.json"] = json.dumps({"exit_code": 0, "duration_s": ran_s}).encode()

    def write(self, dest: Path) -> None:
        for rel, data in self.files.items():
            path = dest / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)

    def verdict(self, stdout: str, nonce: str, **kw: Any) -> Verdict:
        keep = (lambda payload: self.bank.keep(self.draw, payload)) if self.bank is not None else None
        return verdict_from_check(stdout, nonce, keep=keep, **kw)


def verdict_from_check(stdout: str, nonce: str, *, exit_code: int | None, duration_s: float,
                       source: str, timed_out: bool = False,
                       keep: Callable[[Any], None] | None = None) -> Verdict:
    """Turn a check's stdout into a Verdict; anything unparseable is an infra error. ``keep``
    receives the results of a reference run the check made for the host's bank, if any."""
    if timed_out:
        return Verdict(passed=False, outcome=Outcome.infra_error, duration_s=duration_s,
                       source=source, reasons=["the hidden check exceeded its time budget"])
    data = parse_verdict(stdout, nonce)
    if data is not None:
        bank = data.pop("bank", None)
        if bank is not None and keep is not None:
            keep(bank)
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


def infra_verdict(why: str, source: str) -> Verdict:
    """A verification the sandbox could not carry out (never scored against the agent)."""
    return Verdict(passed=False, outcome=Outcome.infra_error, source=source, reasons=[why])
