"""The episode protocol: reset / step / state / close_episode with typed results.

One shape for every way of holding an episode: :class:`~sandbox_env.environment.LocalEpisode`
(in this process), :class:`~sandbox_env.client.TriageClient` (over HTTP) and the eval
runner's recording session implement it; the baseline agent, the eval policies and the TRL
adapter drive any of them. Failures are :class:`~sandbox_env.errors.EnvError` subclasses
(a client rebuilds the server's error from its stable code), so a caller decides with
``sandbox_env.errors.ERRORS`` whatever carried the episode.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from .actions import ActionModel
from .models import State, StepResult


@runtime_checkable
class Episode(Protocol):
    """One live episode at a time; ``reset`` starts (or restarts) it."""

    episode_id: str | None

    def reset(self, task: str | None = None, seed: int | None = None,
              episode_id: str | None = None, compact: bool = False) -> StepResult:
        """Start an episode on ``task`` (or one picked by ``seed``). Raises UnknownTask."""
        ...

    def step(self, action: Mapping[str, Any] | ActionModel) -> StepResult:
        """Apply one action. Raises InvalidAction, EpisodeDone, NotReset, SandboxUnavailable."""
        ...

    def state(self) -> State:
        """The episode's bookkeeping. Raises NotReset."""
        ...

    def close_episode(self) -> None:
        """End the episode and free what it holds; ``reset`` may start another. Idempotent."""
        ...
