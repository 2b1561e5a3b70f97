"""The eval runner's episode: the episode protocol in process (LocalEpisode), each call timed, recorded."""

from __future__ import annotations

import threading
import time
from typing import Any

from ..actions import ActionModel, parse_action
from ..client import EnvClientError
from ..environment import LocalEpisode, TriageEnvironment
from ..errors import EnvError
from ..models import Observation, State, StepResult
from .records import ObservationRecord, StepRecord


class EnvCallError(EnvClientError):
    """An environment call failed. ``kind``: refused (the action, like a 4xx), infra (the
    sandbox cannot serve: not the agent's fault, retried), env (a bug of the environment),
    interrupted (the eval is stopping). Decided by errors.ERRORS, never by guessing."""

    def __init__(self, status: int, detail: str, kind: str, code: str | None = None) -> None:
        super().__init__(status, detail, code)
        self.kind = kind


def classify(exc: BaseException) -> EnvCallError:
    """The eval's view of a failed call: EnvErrors by their table entry; OS-level failures
    (a lost connection, a timeout talking to an engine) are infra; anything else is a bug."""
    if isinstance(exc, EnvError):
        return EnvCallError(exc.status, exc.message, exc.face.eval_status, exc.code)
    if isinstance(exc, OSError | TimeoutError):
        return EnvCallError(503, f"{type(exc).__name__}: {exc}", "infra", "SANDBOX_UNAVAILABLE")
    return EnvCallError(500, f"{type(exc).__name__}: {exc}", "env")


class EpisodeSession:
    """The episode protocol (protocol.Episode) over an in-process environment, like
    TriageClient (so the baseline agent drives it unchanged); every call is timed and recorded."""

    def __init__(self, env: TriageEnvironment, stop: threading.Event | None = None) -> None:
        self.env = env
        self.local = LocalEpisode(env)
        self.stop = stop or threading.Event()
        self.initial: ObservationRecord | None = None
        self.steps: list[StepRecord] = []
        self.reset_s = 0.0
        self.env_error: EnvCallError | None = None  # the first infra/env failure, if any
        self.last_obs: Observation | None = None
        self.closed = False
        self.interrupted = False  # a call was refused because the eval is stopping
        self.episode_id: str | None = None

    # -- the TriageClient surface ---------------------------------------------------------
    def reset(self, task: str | None = None, seed: int | None = None,
              episode_id: str | None = None, compact: bool = False) -> StepResult:
        self._check_stop()
        t0 = time.monotonic()
        try:
            res = self.local.reset(task=task, seed=seed, episode_id=episode_id, compact=compact)
        except Exception as exc:
            raise self._failure(exc) from exc
        finally:
            self.reset_s += time.monotonic() - t0
        self.initial = ObservationRecord.of(res.observation)
        self.last_obs = res.observation
        self.episode_id = res.episode_id
        return res

    def step(self, action: dict[str, Any] | ActionModel) -> StepResult:
        self._check_stop()
        raw = action.model_dump(mode="json") if isinstance(action, ActionModel) else dict(action)
        kind = str(raw.get("action_type", "?"))
        rec = StepRecord(index=len(self.steps) + 1, action=raw, action_type=kind)
        t0 = time.monotonic()
        try:
            parsed = parse_action(raw)
            rec.action = parsed.model_dump(exclude={"metadata"})
            res = self.local.step(parsed)
        except Exception as exc:
            err = self._failure(exc)
            rec.refused = err.detail if err.kind == "refused" else str(err)
            rec.infra, rec.duration_s = err.kind == "infra", time.monotonic() - t0
            self.steps.append(rec)
            raise err from (None if err.kind == "refused" else exc)
        obs = res.observation
        rec.duration_s = time.monotonic() - t0
        rec.observation = ObservationRecord.of(obs)
        rec.reward, rec.done = obs.reward, obs.done
        rec.infra = obs.system_status == "infra_error"
        self.steps.append(rec)
        self.last_obs = obs
        return res

    def state(self) -> State:
        try:
            return self.local.state()
        except Exception as exc:
            raise self._failure(exc) from None

    def close_episode(self) -> None:
        """The runner reads the final state after the agent is done, then closes the env."""
        self.closed = True

    # -- helpers ----------------------------------------------------------------------------
    def _failure(self, exc: BaseException) -> EnvCallError:
        """Classify a failed call; the first infra/env failure is kept for the record."""
        err = classify(exc)
        if err.kind != "refused" and self.env_error is None:
            self.env_error = err
        return err

    def _check_stop(self) -> None:
        if self.stop.is_set():
            self.interrupted = True
            raise EnvCallError(503, "the evaluation is being interrupted", "interrupted")
