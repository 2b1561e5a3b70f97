"""Episode operations shared by the HTTP, WebSocket and MCP faces: validation, locking, threads.

Steps that can wait on I/O (command runs, verification, the LLM judge) run in worker threads
bounded by one capacity limiter, so they never block the event loop; in-memory steps (reads,
edits, diffs, resets) run inline, which is faster than a thread hop and, under the GIL, no
less concurrent.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..environment import EpisodeDone, InvalidAction, NotReset, parse_action
from ..models import State, StepResult
from ..sandbox import SandboxUnavailable
from ..tasks import TaskRegistry, UnknownTask
from .sessions import EpisodeError, Session, SessionManager

T = TypeVar("T")


class ResetParams(BaseModel):
    """Body of a reset: HTTP ``POST /reset``, the WebSocket ``reset`` message, MCP session create."""

    model_config = ConfigDict(extra="forbid", strict=True)  # "seed": true is not a seed
    task: str | None = Field(default=None, max_length=200, description="task id; random by seed if omitted")
    seed: int | None = None
    episode_id: str | None = Field(default=None, min_length=1, max_length=128)
    compact: bool = Field(default=False, description=(
        "observation form: false (the seed's) sends every workspace file in current_files on "
        "every step; true sends only the files the step read or changed"))


def validation_message(exc: ValidationError, prefix: str = "invalid request") -> str:
    msgs = [f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}" for e in exc.errors()]
    return f"{prefix}: " + "; ".join(msgs[:8])


def parse_reset(data: Any, *, lenient: bool = False) -> ResetParams:
    """Validate reset parameters; ``lenient`` drops unknown keys (OpenEnv clients pass extras)."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise EpisodeError(422, "VALIDATION_ERROR", "reset parameters must be a JSON object")
    if lenient:
        data = {k: v for k, v in data.items() if k in ResetParams.model_fields}
    try:
        return ResetParams.model_validate(data)
    except ValidationError as exc:
        raise EpisodeError(422, "VALIDATION_ERROR", validation_message(exc)) from None


class EpisodeService:
    """reset / step / state on sessions, with the errors every face maps to its own protocol."""

    def __init__(self, tasks: TaskRegistry, sessions: SessionManager, max_threads: int) -> None:
        self.tasks = tasks
        self.sessions = sessions
        self._max_threads = max_threads
        self._limiter: anyio.CapacityLimiter | None = None

    async def in_thread(self, fn: Callable[..., T], *args: Any, **kw: Any) -> T:
        if self._limiter is None:  # created lazily: it must belong to the running loop
            self._limiter = anyio.CapacityLimiter(self._max_threads)
        return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kw), limiter=self._limiter)

    def check_task(self, task: str | None) -> None:
        if task is not None:
            try:
                self.tasks.get(task)
            except UnknownTask as exc:
                raise EpisodeError(404, "UNKNOWN_TASK", str(exc)) from None

    async def reset(self, session: Session, params: ResetParams) -> StepResult:
        self.check_task(params.task)
        async with session.lock:
            obs = session.env.reset(seed=params.seed, episode_id=session.episode_id, task=params.task,
                                    compact=params.compact)
            session.touch()
        return StepResult(observation=obs, reward=obs.reward, done=obs.done, episode_id=session.episode_id)

    @staticmethod
    def parse_action(raw: Any) -> Any:
        try:
            return parse_action(raw)
        except InvalidAction as exc:
            raise EpisodeError(422, "INVALID_ACTION", str(exc)) from None

    async def step(self, session: Session, action: Any) -> StepResult:
        """Run one validated action (see :meth:`parse_action`) in the session's environment."""
        async with session.lock:
            try:
                if session.env.may_block(action):
                    obs = await self.in_thread(session.env.step, action)
                else:
                    obs = session.env.step(action)
            except EpisodeDone as exc:
                raise EpisodeError(409, "EPISODE_DONE", str(exc)) from None
            except NotReset:
                raise EpisodeError(409, "NOT_RESET", "this episode has not been reset yet: "
                                   "send a reset first") from None
            except SandboxUnavailable as exc:
                raise EpisodeError(503, "SANDBOX_UNAVAILABLE",
                                   f"{exc}. The step was not taken; retry once GET /health reports "
                                   "docker_available") from None
            finally:
                session.touch()
        return StepResult(observation=obs, reward=obs.reward, done=obs.done, episode_id=session.episode_id)

    @staticmethod
    def state(session: Session) -> State:
        session.touch()
        try:
            return session.env.state
        except NotReset:
            raise EpisodeError(409, "NOT_RESET", "this episode has not been reset yet: "
                               "send a reset first") from None
