"""Episode operations shared by the HTTP, WebSocket and MCP faces: validation, locking, threads.

Steps that can wait on I/O or compute at length (command runs, verification, the LLM judge,
the mock's classification of a never-seen state) run in worker threads bounded by one capacity
limiter, so they never block the event loop; in-memory steps (reads, edits, diffs, resets, and
the mock's replay of a recorded or classified state) run inline, which is faster than a thread
hop and, under the GIL, no less concurrent.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..actions import ActionModel, parse_action, validation_message
from ..errors import InvalidRequest, SandboxUnavailable
from ..models import State, StepResult
from ..suite.tasks import TaskRegistry
from .sessions import Session, SessionManager

T = TypeVar("T")


class ResetParams(BaseModel):
    """Body of a reset: HTTP ``POST /reset``, the WebSocket ``reset`` message, MCP session create."""

    model_config = ConfigDict(extra="forbid", strict=True)  # "seed": true is not a seed
    task: str | None = Field(default=None, max_length=200, description=(
        "task id, or family@N for variant N of a family; with a seed and no @, variant `seed` of "
        "a family that declares variants; random by seed (variant 0) if omitted"))
    seed: int | None = None
    episode_id: str | None = Field(default=None, min_length=1, max_length=128)
    compact: bool = Field(default=False, description=(
        "observation form: false (the seed's) sends every workspace file in current_files on "
        "every step; true sends only the files the step read or changed"))


def parse_reset(data: Any, *, lenient: bool = False) -> ResetParams:
    """Validate reset parameters; ``lenient`` drops unknown keys (OpenEnv clients pass extras)."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InvalidRequest("reset parameters must be a JSON object")
    if lenient:
        data = {k: v for k, v in data.items() if k in ResetParams.model_fields}
    try:
        return ResetParams.model_validate(data)
    except ValidationError as exc:
        raise InvalidRequest(validation_message(exc)) from None


class EpisodeService:
    """reset / step / state on sessions. Raises errors.EnvError subclasses, which every face
    answers through errors.ERRORS."""

    def __init__(self, tasks: TaskRegistry, sessions: SessionManager, max_threads: int) -> None:
        self.tasks = tasks
        self.sessions = sessions
        self._max_threads = max_threads
        self._limiter: anyio.CapacityLimiter | None = None

    async def in_thread(self, fn: Callable[..., T], *args: Any, **kw: Any) -> T:
        if self._limiter is None:  # created lazily: it must belong to the running loop
            self._limiter = anyio.CapacityLimiter(self._max_threads)
        return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kw), limiter=self._limiter)

    def check_task(self, task: str | None, seed: int | None = None) -> None:
        """Raises UnknownTask (naming the available ones; UnknownVariant for a variant that does
        not exist) or VariantNotCertified before any session is opened."""
        if task is not None:
            self.tasks.resolve(task, seed)

    async def reset(self, session: Session, params: ResetParams) -> StepResult:
        self.check_task(params.task, params.seed)
        async with session.lock:
            obs = session.env.reset(seed=params.seed, episode_id=session.episode_id, task=params.task,
                                    compact=params.compact)
            session.touch()
        return StepResult(observation=obs, reward=obs.reward, done=obs.done, episode_id=session.episode_id)

    parse_action = staticmethod(parse_action)  # raises InvalidAction

    async def step(self, session: Session, action: ActionModel) -> StepResult:
        """Run one validated action in the session's environment; steps that may wait on I/O
        or compute at length (runs, verification, judging, a mock's classification of a new
        state: ``TriageEnvironment.blocks``) run in a worker thread, the rest inline."""
        async with session.lock:
            try:
                if session.env.blocks(action):
                    obs = await self.in_thread(session.env.step, action)
                else:
                    obs = session.env.step(action)
            except SandboxUnavailable as exc:
                raise SandboxUnavailable(f"{exc.message}. The step was not taken; retry once GET "
                                         "/health reports the sandbox available") from None
            finally:
                session.touch()
        return StepResult(observation=obs, reward=obs.reward, done=obs.done, episode_id=session.episode_id)

    @staticmethod
    def state(session: Session) -> State:
        session.touch()
        return session.env.state
