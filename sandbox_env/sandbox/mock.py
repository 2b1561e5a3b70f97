"""Replays traces recorded from real runs; no Docker and no torch needed.

Lookup order for a workspace state: an exact recording (comment-insensitive content hash),
then a real syntax check, then the task's static classifier, which names the behaviour
whose recorded run is replayed. Every output ends with a neutral note of its provenance
(recorded / inferred / unsure) and where the run was recorded: never which labelled state or
behaviour it is (a policy trained here must not read "wrong" or "cheat" off its own runs). The
state and the behaviour go to the log (logger ``sandbox_env.mock``) and to ``source``, which
operators see in eval records and agents never do.

A generated variant (N >= 1) answers from its own recordings (``sandbox-env record family@N
--behaviours``: one recorded state per behaviour, under the family's ``variants/traces/<N>/``)
as any task does: an exact state is ``recorded``, a behaviour its classifier names is replayed
from the variant's own run of it. A behaviour the variant has no run of (or a variant without
recordings) falls back to variant 0: the workspace is mapped back to variant 0's names
(variants.to_base), variant 0's recording is chosen as above and replayed with the variant's
names; such a verdict is never ``recorded`` (at best ``inferred``, source
``mock:variant0-mapped:...``), and a workspace the inverse map cannot undo is ``unsure``.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import re
import shlex
import threading
from collections import OrderedDict
from concurrent.futures import ProcessPoolExecutor
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from ..analysis import UNSURE
from ..models import Limits, Outcome, RunResult, Verdict
from ..suite.tasks import TaskSpec, load_task
from ..suite.traces import Trace, load_traces
from ..suite.variants import renamer_of, to_base
from ..workspace import Workspace
from .base import normalise_command

_PREFERRED = ("original", "solution")
PASSING_BEHAVIOUR = "fixed"  # the one behaviour label whose states pass verification
log = logging.getLogger("sandbox_env.mock")
# what the agent reads at the end of a mock answer: neutral, the same for every state
RECORDED = "replayed from a real run of this exact workspace state (recorded)"
INFERRED = ("this workspace state was never run for real; this is the recorded real run of a state "
            "the mock judges equivalent (inferred)")
UNSURE_NOTE = ("this workspace state was never run for real and the mock cannot tell what a real run "
               "would show; it does not guess (unsure: docker or process mode runs it for real)")
NO_RECORDING = ("this workspace state was never run for real and no equivalent run was recorded "
                "(docker or process mode runs it for real)")
WORKERS_ENV = "SANDBOX_ENV_CLASSIFY_WORKERS"


def default_workers() -> int:
    """Classifier processes for a serving mock (0, the default: classify in the caller)."""
    return max(0, int(os.environ.get(WORKERS_ENV, "0") or 0))


@cache
def _task_at(root: str) -> TaskSpec:
    return load_task(Path(root))


def _classify_in_worker(root: str, files: dict[str, str]) -> str:
    """A classifier process's job: the task folder's classifier on one workspace state."""
    return _task_at(root).classifier(files)


class MockSandbox:
    """Answers run/verify from recordings; ``exclude`` hides states (leave-one-out)."""

    mode = "mock"

    def __init__(self, exclude: set[str] | None = None, *, workers: int = 0) -> None:
        """``workers``: classify never-recorded states in that many processes (0: in the
        calling thread). Classification is pure and CPU-bound: in processes it runs on every
        core and never holds the server's GIL, so cheap steps of other episodes stay fast."""
        self._exclude = exclude or set()
        self._workers = workers
        self._pool: ProcessPoolExecutor | None = None
        self._cache: dict[str, list[Trace]] = {}
        self._recorded_commands: dict[str, frozenset[str]] = {}
        self._by_hash: dict[str, dict[str, Trace]] = {}  # task -> workspace hash -> first trace
        self._lock = threading.Lock()
        # (task, content hash) -> classifier label: a run and the submit that follows it (or
        # another rollout reaching the same state) classify once
        self._labels: OrderedDict[tuple[str, str], str] = OrderedDict()

    # -- lifecycle (SandboxBackend) -------------------------------------------------------
    @classmethod
    def available(cls) -> tuple[bool, str]:
        return True, "replays runs recorded under task_repos/<id>/traces (no Docker, no torch)"

    @classmethod
    def create(cls, *, owner: str | None = None) -> MockSandbox:
        return cls(workers=default_workers())

    @classmethod
    def cleanup(cls, owner: str | None = None) -> int:
        return 0  # nothing outlives the process

    def provenance(self) -> dict[str, Any]:
        return {}  # each replayed output names where it was recorded (Trace.provenance)

    def traces(self, task: TaskSpec) -> list[Trace]:
        with self._lock:
            if task.id not in self._cache:
                self._cache[task.id] = [t for t in load_traces(task)
                                        if f"{task.id}/{t.state}" not in self._exclude]
            return self._cache[task.id]

    def _recorded(self, task: TaskSpec, h: str) -> Trace | None:
        """The first trace (in load order) recorded in the state of content hash ``h``."""
        traces = self.traces(task)
        with self._lock:
            index = self._by_hash.get(task.id)
            if index is None:
                index = {}
                for t in traces:
                    index.setdefault(t.workspace_hash, t)
                self._by_hash[task.id] = index
        return index.get(h)

    def _commands(self, task: TaskSpec) -> frozenset[str]:
        """Every command some recording of ``task`` ran."""
        traces = self.traces(task)
        with self._lock:
            cached = self._recorded_commands.get(task.id)
            if cached is None:
                cached = frozenset(r.command for t in traces for r in t.runs)
                self._recorded_commands[task.id] = cached
            return cached

    # -- lookup ---------------------------------------------------------------------------
    def _lookup(self, workspace: Workspace, task: TaskSpec) -> tuple[Trace | None, str, str | None]:
        """(trace, the neutral note the agent reads, inferred behaviour or None); which state
        and behaviour were chosen is logged, never returned in text."""
        traces = self.traces(task)
        h = workspace.content_hash()
        t = self._recorded(task, h)
        if t is not None:
            log.info("%s: exact recording %s", task.id, t.state)
            return t, RECORDED, None
        try:
            behaviour = self._classify(workspace, task, h)
        except Exception as exc:  # a classifier bug must not look like the agent's failure
            log.exception("%s: the mock classifier failed", task.id)
            return None, f"the mock could not analyse this workspace state ({type(exc).__name__})", None
        if behaviour == UNSURE:
            log.info("%s: classifier unsure", task.id)
            return None, UNSURE_NOTE, UNSURE
        same = [t for t in traces if t.behaviour == behaviour]
        if not same:
            log.info("%s: classifier infers %r, of which no run was recorded", task.id, behaviour)
            return None, NO_RECORDING, behaviour
        same.sort(key=lambda t: (t.state not in _PREFERRED, t.state))
        t = same[0]
        log.info("%s: classifier infers %r, replaying %s", task.id, behaviour, t.state)
        return t, INFERRED, behaviour

    def _classify(self, workspace: Workspace, task: TaskSpec, h: str) -> str:
        key = (task.id, h)
        with self._lock:
            if key in self._labels:
                self._labels.move_to_end(key)
                return self._labels[key]
        files = dict(workspace.files)
        pool = self._classifier_pool()
        label = (pool.submit(_classify_in_worker, str(task.root), files).result() if pool is not None
                 else task.classifier(files))
        with self._lock:
            self._labels[key] = label
            if len(self._labels) > 4096:
                self._labels.popitem(last=False)
        return label

    @staticmethod
    def _footer(t: Trace | None, how: str) -> str:
        if t is None:
            return f"[mock] {how}"
        p = t.provenance
        image = f", image {p.image[:19]}" if p.image else ""
        where = f"{p.source}{image}, torch {p.torch}, {p.recorded_at[:10]}"
        return f"[mock] {how}; recorded in {where}"

    # -- variants -------------------------------------------------------------------------
    def _own(self, workspace: Workspace, task: TaskSpec) -> tuple[Trace | None, str, str | None] | None:
        """The lookup in variant ``task``'s own recordings when it finds a trace to replay (None:
        the variant answers through variant 0's recordings)."""
        if not self.traces(task):
            return None
        found = self._lookup(workspace, task)
        return found if found[0] is not None else None

    @staticmethod
    def _variant_note(task: TaskSpec) -> str:
        log.info("%s: no recording of its own; variant 0's, names mapped", task.id)
        return ("[mock] no run of this project in this state was recorded; this is the recorded run "
                "of an equivalent project with this project's names (inferred)")

    def _run_variant(self, workspace: Workspace, command: str, limits: Limits, task: TaskSpec) -> RunResult:
        assert task.variant is not None
        base = task.base_task
        files = to_base(dict(workspace.files), task.variant, base.entry.config)
        if files is None:
            return RunResult(command=command, exit_code=None, outcome=Outcome.infra_error, duration_s=0.0,
                             source="mock:unsure", refused=True,
                             output=f"[mock] {UNSURE_NOTE}; this did not use a step")
        res = self.run(Workspace(files), command, limits, base)
        names = renamer_of(task.variant)
        return res.model_copy(update={
            "output": _without_footer(names.prose(res.output)) + "\n\n" + self._variant_note(task),
            "source": f"mock:variant0-mapped:{res.source.removeprefix('mock:')}"})

    def _verify_variant(self, workspace: Workspace, task: TaskSpec) -> Verdict:
        assert task.variant is not None
        base = task.base_task
        files = to_base(dict(workspace.files), task.variant, base.entry.config)
        if files is None:
            return Verdict(passed=False, outcome=Outcome.failed, source="mock:unsure", provenance="unsure",
                           reasons=["the mock cannot tell whether this fix works; the episode is not scored",
                                    f"[mock] {UNSURE_NOTE}"])
        v = self.verify(Workspace(files), base)
        names = renamer_of(task.variant)
        provenance = "inferred" if v.provenance == "recorded" else v.provenance
        return v.model_copy(update={
            "reasons": [names.prose(r) for r in v.reasons if not r.startswith("[mock] ")]
            + [self._variant_note(task)],
            "source": f"mock:variant0-mapped:{v.source.removeprefix('mock:')}",
            "provenance": provenance})

    def answerable_commands(self, task: TaskSpec) -> list[str]:
        """What a mock episode of ``task`` can run: its recorded commands and the builtins."""
        base = task.base_task if task.variant is not None and not self.traces(task) else task
        return [*sorted(self._commands(base)), BUILTINS + " (single commands, no pipes)"]

    def answers_at_once(self, workspace: Workspace, task: TaskSpec, command: str | None = None) -> bool:
        """Whether ``run(command)`` (``verify`` when ``command`` is None) is a lookup, cheap enough
        for an event loop: a builtin or unrecorded command, or a state recorded or already
        classified. False when it may classify (CPU-bound, or a wait on a classifier process)
        or map a variant; a label evicted in between only makes the call classify again."""
        if task.variant is not None:
            return False
        if command is not None and normalise_command(command) not in self._commands(task):
            return True  # a builtin, or the refusal naming what is recorded
        h = workspace.content_hash()
        if self._recorded(task, h) is not None:
            return True
        with self._lock:
            return (task.id, h) in self._labels

    # -- Sandbox interface ----------------------------------------------------------------
    def run(self, workspace: Workspace, command: str, limits: Limits, task: TaskSpec) -> RunResult:
        cmd = normalise_command(command)
        builtin = self._builtin(workspace, cmd)
        if builtin is not None:
            return builtin
        own = self._own(workspace, task) if task.variant is not None else None
        if task.variant is not None and own is None:
            return self._run_variant(workspace, command, limits, task)
        recorded = self._commands(task)
        if cmd not in recorded:
            return RunResult(command=command, exit_code=None, outcome=Outcome.infra_error,
                             duration_s=0.0, source="mock:refused", refused=True,
                             output=cannot_run(command, recorded))
        err = workspace.first_syntax_error() if cmd.startswith("python") else None
        if err:
            return RunResult(command=command, exit_code=1, outcome=Outcome.failed,
                             duration_s=0.05, source="mock:syntax",
                             output=_python_syntax_report(err) +
                             "\n[mock] syntax checked for real by compiling the file")
        trace, how, _ = own or self._lookup(workspace, task)
        rec = trace.run_for(cmd) if trace else None
        if trace is None or rec is None:
            return RunResult(command=command, exit_code=None, outcome=Outcome.infra_error, duration_s=0.0,
                             output=self._footer(None, how) + "; this did not use a step",
                             source="mock:unsure", refused=True)
        return rec.model_copy(update={
            "command": command,
            "output": rec.output.rstrip("\n") + "\n\n" + self._footer(trace, how),
            "changed_files": {},
            "source": f"mock:{trace.state}",
        })

    def verify(self, workspace: Workspace, task: TaskSpec) -> Verdict:
        own = self._own(workspace, task) if task.variant is not None else None
        if task.variant is not None and own is None:
            return self._verify_variant(workspace, task)
        err = workspace.first_syntax_error()
        if err:
            return Verdict(passed=False, outcome=Outcome.failed, source="mock:syntax",
                           reasons=[f"the code does not compile: {err}"], provenance="measured")
        trace, how, behaviour = own or self._lookup(workspace, task)
        if behaviour == UNSURE:
            return Verdict(passed=False, outcome=Outcome.failed, source="mock:unsure", provenance="unsure",
                           reasons=["the mock cannot tell whether this fix works; the episode is not "
                                    "scored", self._footer(None, how)])
        if trace is None and behaviour is not None:
            passed = behaviour == PASSING_BEHAVIOUR
            return Verdict(passed=passed, outcome=Outcome.passed if passed else Outcome.failed,
                           source="mock:inferred", provenance="inferred",
                           reasons=["the verdict is inferred from the behaviour alone; nothing "
                                    "was measured", self._footer(None, how)])
        if trace is None:
            return Verdict(passed=False, outcome=Outcome.infra_error, source="mock",
                           reasons=[self._footer(None, how)])
        v = trace.verdict
        return v.model_copy(update={
            "reasons": [*v.reasons, self._footer(trace, how)],
            "source": f"mock:{trace.state}",
            "provenance": "inferred" if behaviour is not None else "recorded",
        })

    def _classifier_pool(self) -> ProcessPoolExecutor | None:
        if not self._workers:
            return None
        with self._lock:
            if self._pool is None:  # forkserver: never fork a process that runs threads
                self._pool = ProcessPoolExecutor(self._workers,
                                                 mp_context=multiprocessing.get_context("forkserver"))
            return self._pool

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    @staticmethod
    def _builtin(workspace: Workspace, cmd: str) -> RunResult | None:
        """The few read-only shell commands mock mode answers from the workspace itself (a
        single command: a pipe, a redirection or a second command is not one of them)."""
        argv = _argv(cmd)
        if not argv or _SHELL_SYNTAX.search(cmd):
            return None
        out: str | None = None
        if argv == ("pwd",):
            out = "/workspace\n"
        elif argv[0] == "ls" and all(a.startswith("-") for a in argv[1:]):
            out = "\n".join(workspace.paths()) + "\n"
        elif argv[0] == "cat" and len(argv) >= 2:
            try:
                out = "".join(workspace.read(a) for a in argv[1:])
            except ValueError as exc:
                return RunResult(command=cmd, output=f"cat: {exc}\n", exit_code=1,
                                 outcome=Outcome.failed, duration_s=0.0, source="mock:builtin")
        if out is None:
            return None
        return RunResult(command=cmd, output=out, exit_code=0, outcome=Outcome.passed,
                         duration_s=0.0, source="mock:builtin")


_SHELL_SYNTAX = re.compile(r"[|&;<>()$`\n]")
BUILTINS = "ls, cat FILE..., pwd"


def cannot_run(command: str, recorded: frozenset[str]) -> str:
    """What the agent reads when mock mode cannot answer a command (no step is spent)."""
    known = "; ".join(sorted(recorded)) or "(none recorded)"
    return (f"[mock] mock mode replays runs recorded for real and cannot execute {command!r}; "
            f"this did not use a step.\nIt answers: {known}; and {BUILTINS} (single commands, "
            "no pipes or redirections).\nUse read_file / view_git_diff to inspect code; docker or "
            "process mode runs any command.")


@lru_cache(maxsize=1024)
def _argv(cmd: str) -> tuple[str, ...] | None:
    """A command's words as the shell splits them (None: unbalanced quotes)."""
    try:
        return tuple(shlex.split(cmd))
    except ValueError:
        return None


def _without_footer(output: str) -> str:
    """A replayed output without its own provenance note (a variant adds its own)."""
    head, sep, _ = output.rstrip("\n").rpartition("\n\n[mock] ")
    return head if sep else output.rstrip("\n")


def _python_syntax_report(err: str) -> str:
    """Render a compile error the way the interpreter prints it at start-up."""
    head, _, rest = err.partition(": SyntaxError: ")
    path, _, line = head.rpartition(":")
    msg, _, code = rest.partition("\n")
    body = f'  File "{path}", line {line}\n'
    if code.strip():
        body += f"    {code.strip()}\n"
    return body + f"SyntaxError: {msg}\n"
