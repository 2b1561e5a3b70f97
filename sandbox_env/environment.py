"""TriageEnvironment: one debugging episode (reset / step / state / close), OpenEnv-shaped."""

from __future__ import annotations

import random
import uuid
from typing import Any

from .actions import (
    ActionModel,
    EditFile,
    ExecuteBash,
    ReadFile,
    SubmitFix,
    ViewGitDiff,
    parse_action,
)
from .agent_view import agent_text, agent_verdict
from .errors import EpisodeDone, InvalidAction, NotReset, SandboxUnavailable
from .instructions import INSTRUCTIONS, episode_instructions
from .models import Observation, Outcome, State, StepResult, Verdict
from .rubrics import ConceptJudge, ExplanationJudge, StepShaper, clamp_score, terminal_score
from .sandbox.base import Sandbox, normalise_command
from .suite.tasks import BLIND_PREFIX, TaskRegistry, TaskSpec
from .workspace import Workspace, WorkspaceError, syntax_error

__all__ = [
    "INSTRUCTIONS",
    "EpisodeDone",
    "InvalidAction",
    "LocalEpisode",
    "NotReset",
    "TriageEnvironment",
    "episode_instructions",
    "parse_action",
]

FREE_INFRA_ERRORS = 3  # infrastructure failures that do not consume the step budget

class TriageEnvironment:
    """An episode over one task: the workspace, the step budget, the rubric, the sandbox.

    The sandbox is borrowed: whoever made it closes it (it may serve many environments at
    once). Threads, sessions and transports are the callers' business.
    """

    def __init__(self, tasks: TaskRegistry, sandbox: Sandbox, judge: ExplanationJudge | None = None) -> None:
        self.tasks = tasks
        self.sandbox = sandbox
        self.judge = judge or ConceptJudge()
        self.task: TaskSpec | None = None
        self.task_name = ""  # what the agent is told the task is called (a blind id hides the family)
        self.workspace: Workspace | None = None
        self.shaper = StepShaper(signal_files=set())
        self.compact = False
        self.failed_runs = 0
        self.last_run_status = "not_run"
        self.operator_verdict: Verdict | None = None  # the whole verdict: operators only (eval records)
        self._state: State | None = None

    @property
    def mode(self) -> str:
        return self.sandbox.mode

    # ------------------------------------------------------------------ OpenEnv surface
    def reset(self, seed: int | None = None, episode_id: str | None = None,
              task: str | None = None, compact: bool = False, **_: Any) -> Observation:
        """Start an episode on ``task`` (or one picked by ``seed``); returns the first observation.

        ``task`` may name a variant (``family@N``); ``task=family`` with a seed is variant
        ``seed`` of a family that declares variants (``TaskRegistry.resolve``). Without a task
        the seed picks a family, variant 0.

        ``compact`` picks the observation form: by default (the seed's) ``current_files`` holds
        every workspace file on every step; compact sends only the files a step read or changed.
        """
        spec = self.tasks.resolve(task, seed) if task else random.Random(seed).choice(list(self.tasks))
        self.task = spec
        blind = bool(task and task.startswith(BLIND_PREFIX))  # the agent sees only the opaque name
        self.task_name = task if blind and task else spec.id
        self.compact = compact
        self.workspace = Workspace(spec.repo_files())
        self.shaper = StepShaper(signal_files=set(spec.signal_files))
        self.failed_runs = 0
        self.last_run_status = "not_run"
        self.operator_verdict = None
        self._state = State(
            episode_id=episode_id or uuid.uuid4().hex, task_name=self.task_name, mode=self.mode,  # type: ignore[arg-type]
            seed=seed, max_steps=spec.max_steps, workspace_hash=self.workspace.content_hash(),
            family="" if blind else spec.family, variant=0 if blind else spec.variant_index,
            repo_hash="" if blind else spec.repo_hash,
        )
        files = self.workspace.paths()
        return self._observe(
            terminal_output=f"Workspace ready: {', '.join(files)}\nReproduce with: {spec.run_command}",
            current_files=dict(self.workspace.files), reward=0.0,
        )

    def step(self, action: ActionModel) -> Observation:
        """Apply one validated action (see actions.parse_action); the observation and its reward."""
        if self._state is None or self.task is None or self.workspace is None:
            raise NotReset("this episode has not been reset yet: send a reset first")
        if self._state.done:
            raise EpisodeDone(f"episode {self._state.episode_id} is done; call reset()")
        if not isinstance(action, ActionModel):
            raise TypeError(f"step() takes a validated action, not {type(action).__name__}: "
                            "use actions.parse_action (or LocalEpisode.step for raw actions)")
        st = self._state
        st.step_count += 1
        st.actions_taken.append(action.action_type)
        key = action.model_dump_json(exclude={"metadata"})
        before = self.workspace.content_hash()
        handler = {
            "read_file": self._read, "edit_file": self._edit, "execute_bash": self._bash,
            "view_git_diff": self._diff, "submit_fix": self._submit,
        }[action.action_type]
        try:
            obs_kw = handler(action)
        except SandboxUnavailable:  # nothing happened: the step is not taken, the caller may retry
            st.step_count -= 1
            st.actions_taken.pop()
            raise
        if obs_kw.pop("not_run", False):  # the sandbox cannot run it at all (mock mode): no step
            st.step_count -= 1
            st.actions_taken.pop()
            return self._observe(**obs_kw)
        # retrying what infrastructure failed to carry out is not a repetition
        repeated = not obs_kw.pop("infra", False) and self.shaper.repeated(key, before)
        if repeated and not st.done:
            obs_kw["reward"] = obs_kw.get("reward", 0.0) + self.shaper.on_repeat()
            obs_kw["terminal_output"] = ("[note] identical action on an unchanged workspace\n"
                                         + obs_kw.get("terminal_output", ""))
        if not st.done and st.step_count >= st.max_steps:
            st.done = True
            st.score = terminal_score(None, 0.0, st.step_count, st.max_steps)
            obs_kw["terminal_output"] = (obs_kw.get("terminal_output", "") +
                                         "\n\n[episode ended] step budget exhausted before a fix "
                                         "was submitted; the workspace is scored as unverified.")
            obs_kw["system_status"] = "budget_exhausted"
        st.workspace_hash = self.workspace.content_hash()
        st.cumulative_reward = round(st.cumulative_reward + obs_kw.get("reward", 0.0), 6)
        return self._observe(**obs_kw)

    def blocks(self, action: ActionModel) -> bool:
        """Whether ``step(action)`` may wait on I/O or compute at length, so that a caller on an
        event loop runs it in a worker thread. Reads, edits and diffs never do; a run or a
        submission does unless the sandbox answers it from memory (``answers_at_once``, e.g.
        the mock on a recorded or classified state) and, for a submission, the judge does not
        wait for this explanation (``waits_for``: ConceptJudge on one of up to 4,000 characters)."""
        if not action.waits or self._state is None or self._state.done:
            return False  # in memory, or refused at once
        assert self.workspace is not None and self.task is not None
        at_once = getattr(self.sandbox, "answers_at_once", None)
        if at_once is None:
            return True
        if isinstance(action, ExecuteBash):
            return not at_once(self.workspace, self.task, action.command)
        if isinstance(action, SubmitFix):
            judge_waits = getattr(self.judge, "waits_for", None)
            return (judge_waits is None or judge_waits(action.explanation)
                    or not at_once(self.workspace, self.task))
        return True

    @property
    def state(self) -> State:
        if self._state is None:
            raise NotReset("this episode has not been reset yet: send a reset first")
        return self._state

    def close(self) -> None:
        """End the episode (the borrowed sandbox stays open for its owner to close)."""
        self._state = None

    # ------------------------------------------------------------------ actions
    def _read(self, a: ReadFile) -> dict[str, Any]:
        assert self.workspace is not None
        try:
            text = self.workspace.read(a.filename)
        except WorkspaceError as exc:
            return {"terminal_output": str(exc), "last_action_error": str(exc)}
        path = a.filename.removeprefix("./")
        return {"terminal_output": text, "current_files": {path: text},
                "reward": self.shaper.on_read(path)}

    def _edit(self, a: EditFile) -> dict[str, Any]:
        assert self.workspace is not None
        before = self.workspace.content_hash()
        try:
            path = self.workspace.edit(a.filename, a.old_str, a.new_str)
        except WorkspaceError as exc:
            return {"terminal_output": str(exc), "last_action_error": str(exc)}
        text = self.workspace.files[path]
        err = syntax_error(path, text)
        out = f"Edited {path}."
        if err:
            out += f"\nThe file no longer compiles:\n{err}"
        elif self.workspace.content_hash() == before:
            out += " (comments/formatting only: the code's behaviour is unchanged)"
        return {"terminal_output": out, "current_files": {path: text},
                "reward": self.shaper.on_edit(path, err is not None)}

    def _bash(self, a: ExecuteBash) -> dict[str, Any]:
        assert self.workspace is not None and self.task is not None and self._state is not None
        is_repro = self._is_run_command(a.command)  # only the task's command's runs are noted
        before = self.workspace.exact_hash() if is_repro and not self.workspace.blobs else None
        res = self.sandbox.run(self.workspace, a.command, self.task.limits, self.task)
        out = res.output
        if res.refused:
            return {"terminal_output": out, "system_status": "command_unavailable",
                    "last_action_error": out, "not_run": True}
        if res.outcome == Outcome.infra_error:
            return self._infra("run", out)
        header = f"$ {a.command}\n"
        footer = f"\n[exit code {res.exit_code}, {res.duration_s:.1f}s]"  # as a shell shows it: no verdict
        if res.outcome == Outcome.oom_killed:
            footer = f"\n[exit code {res.exit_code}: killed, out of memory, {res.duration_s:.1f}s]"
        if res.outcome == Outcome.timeout:
            footer = f"\n[killed after {self.task.limits.timeout_s:.0f}s time limit: timeout]"
        passed = res.outcome == Outcome.passed
        if is_repro:
            self.last_run_status = "passing" if passed else "failing"
            self.workspace.note_run(before, passed, res.duration_s)
            if not passed:
                self.failed_runs += 1
        reproduced = self.task.failure.shows_in(out)
        changed = bool(self.workspace.changed_paths())
        reward = self.shaper.on_run(reproduced, passed and changed and is_repro)
        status = {"passed": "training_succeeded", "failed": "training_failed",
                  "timeout": "training_timeout", "oom_killed": "out_of_memory"}[res.outcome.value]
        return {"terminal_output": header + out + footer, "reward": reward,
                "system_status": status if is_repro else "command_finished",
                "current_files": {p: self.workspace.files[p] for p in res.changed_files
                                  if p in self.workspace.files}}

    def _diff(self, a: ViewGitDiff) -> dict[str, Any]:
        assert self.workspace is not None
        try:
            d = self.workspace.review_diff(a.filename)
        except WorkspaceError as exc:
            return {"terminal_output": str(exc), "last_action_error": str(exc)}
        return {"terminal_output": d or "No changes."}

    def _submit(self, a: SubmitFix) -> dict[str, Any]:
        assert self.workspace is not None and self.task is not None and self._state is not None
        st = self._state
        full = self.sandbox.verify(self.workspace, self.task)
        if full.outcome == Outcome.infra_error:
            return self._infra("verification", agent_text("\n".join(full.reasons), self.task))
        self.operator_verdict = full
        verdict = agent_verdict(full, self.task)  # what failed and its numbers, not how the check ran
        if verdict.provenance == "unsure":  # the mock cannot tell: the episode ends unscored
            st.done, st.submitted, st.verdict = True, True, verdict
            lines = ["Verification UNSURE: this mode cannot tell whether the fix works; the episode "
                     "is not scored (run it in docker or process mode for a verdict)"]
            return {"terminal_output": "\n".join(lines + [f"- {r}" for r in verdict.reasons]),
                    "reward": 0.0, "verdict": verdict, "system_status": "fix_unsure"}
        diff = self.workspace.diff()
        expl, notes = self.judge.score(a.explanation, self.task, diff)
        score = terminal_score(verdict, expl, st.step_count, st.max_steps)
        st.done, st.submitted, st.verdict = True, True, verdict
        st.score, st.explanation_score = score, expl
        lines = [f"Verification {'PASSED' if verdict.passed else 'FAILED'} ({verdict.outcome.value})"]
        lines += [f"- {r}" for r in verdict.reasons]
        lines += [f"Explanation score {expl:.2f}: " + agent_text("; ".join(notes), self.task),
                  f"Episode score {score:.3f}"]
        return {"terminal_output": "\n".join(lines), "reward": score, "verdict": verdict,
                "system_status": "fix_verified" if verdict.passed else "fix_rejected"}

    def _infra(self, what: str, detail: str) -> dict[str, Any]:
        """An infrastructure failure: reported, not scored, and (a few times) not counted."""
        assert self._state is not None
        st = self._state
        st.infra_errors += 1
        free = st.infra_errors <= FREE_INFRA_ERRORS
        if free:
            st.step_count -= 1
        cost = ("did not use a step" if free else
                f"it used a step (only the first {FREE_INFRA_ERRORS} of an episode are free)")
        msg = (f"[infrastructure] the {what} could not be carried out; this is not a result "
               f"about your code, and {cost}.\n{detail}")
        return {"terminal_output": msg, "system_status": "infra_error", "last_action_error": msg,
                "infra": True}

    # ------------------------------------------------------------------ helpers
    def _is_run_command(self, command: str) -> bool:
        return normalise_command(command) == normalise_command(self.task.run_command)  # type: ignore[union-attr]

    def _answerable(self) -> list[str] | None:
        """The commands a sandbox that cannot run everything answers (None: it runs anything)."""
        answerable = getattr(self.sandbox, "answerable_commands", None)
        return answerable(self.task) if answerable is not None else None

    def _hint(self) -> str | None:
        assert self.task is not None
        if self.failed_runs < 2 or not self.task.hints:
            return None
        return self.task.hints[min((self.failed_runs - 2) // 2, len(self.task.hints) - 1)]

    def _observe(self, *, terminal_output: str = "", current_files: dict[str, str] | None = None,
                 reward: float = 0.0, system_status: str | None = None,
                 verdict: Verdict | None = None, last_action_error: str | None = None) -> Observation:
        assert self._state is not None and self.task is not None and self.workspace is not None
        st = self._state
        run_status = self.last_run_status
        if verdict is not None:
            run_status = ("unknown" if verdict.provenance == "unsure"
                          else "passing" if verdict.passed else "failing")
        return Observation(
            task_name=self.task_name, task_description=self.task.incident_report,
            terminal_output=terminal_output,
            current_files=(current_files or {}) if self.compact else dict(self.workspace.files),
            run_status=run_status,  # type: ignore[arg-type]
            system_status=system_status or ("idle" if st.step_count == 0 else "ready"),
            step_number=st.step_count, max_steps=st.max_steps,
            budget_remaining=max(0, st.max_steps - st.step_count),
            actions_taken=list(st.actions_taken), hint=self._hint(),
            instructions=(episode_instructions(self.task, self._answerable())
                          if st.step_count == 0 and not st.actions_taken else ""),
            done=st.done, reward=round(reward, 6), episode_id=st.episode_id,
            mode=self.mode,  # type: ignore[arg-type]
            files=self.workspace.paths(), verdict=verdict,
            score=clamp_score(st.score) if st.score is not None else None,
            last_action_error=last_action_error,
        )


class LocalEpisode:
    """The episode protocol (protocol.Episode) over a TriageEnvironment in this process.

    Raw actions are validated here (InvalidAction); the environment's own errors pass through
    unchanged, so a caller sees the same EnvError classes as over HTTP.
    """

    def __init__(self, env: TriageEnvironment) -> None:
        self.env = env
        self.episode_id: str | None = None

    def reset(self, task: str | None = None, seed: int | None = None,
              episode_id: str | None = None, compact: bool = False) -> StepResult:
        obs = self.env.reset(seed=seed, episode_id=episode_id, task=task, compact=compact)
        self.episode_id = obs.episode_id
        return _result(obs)

    def step(self, action: Any) -> StepResult:
        return _result(self.env.step(parse_action(action)))

    def state(self) -> State:
        return self.env.state.model_copy(deep=True)

    def close_episode(self) -> None:
        self.env.close()
        self.episode_id = None


def _result(obs: Observation) -> StepResult:
    return StepResult(observation=obs, reward=obs.reward, done=obs.done, episode_id=obs.episode_id)
