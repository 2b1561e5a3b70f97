"""An in-process stand-in for TriageClient over TriageEnvironment that records every step."""

from __future__ import annotations

import threading
import time
from typing import Any, NoReturn

from ..client import EnvClientError
from ..environment import EpisodeDone, InvalidAction, NotReset, TriageEnvironment, parse_action
from ..models import Observation, State, StepResult
from ..sandbox.base import SandboxUnavailable
from ..tasks import UnknownTask
from .records import ObservationRecord, StepRecord

INFRA_MODULES = ("docker", "requests", "urllib3")


class EnvCallError(EnvClientError):
    """An environment call failed. ``kind``: refused (the action, like a 4xx), infra (the
    sandbox's engine), env (a bug of the environment), interrupted (the eval is stopping)."""

    def __init__(self, status: int, detail: str, kind: str) -> None:
        super().__init__(status, detail)
        self.kind = kind


def is_infra_exception(exc: BaseException) -> bool:
    """Failures of the machinery under the sandbox (engine gone, timeouts talking to it)."""
    return (isinstance(exc, SandboxUnavailable | OSError | TimeoutError)
            or type(exc).__module__.split(".")[0] in INFRA_MODULES)


class EpisodeSession:
    """reset / step / state / close_episode like TriageClient (so the baseline agent drives it
    unchanged), over an in-process environment; every call is timed and recorded."""

    def __init__(self, env: TriageEnvironment, stop: threading.Event | None = None) -> None:
        self.env = env
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
            obs = self.env.reset(seed=seed, episode_id=episode_id, task=task, compact=compact)
        except UnknownTask as exc:
            raise EnvCallError(404, str(exc), "refused") from None
        except Exception as exc:
            raise self._failure(exc) from exc
        finally:
            self.reset_s += time.monotonic() - t0
        self.initial = ObservationRecord.of(obs)
        self.last_obs = obs
        self.episode_id = obs.episode_id
        return StepResult(observation=obs, reward=obs.reward, done=obs.done, episode_id=obs.episode_id)

    def step(self, action: dict[str, Any]) -> StepResult:
        self._check_stop()
        raw = dict(action)
        kind = str(raw.get("action_type", "?"))
        rec = StepRecord(index=len(self.steps) + 1, action=raw, action_type=kind)
        t0 = time.monotonic()
        try:
            parsed = parse_action(raw)
            rec.action = parsed.model_dump(exclude={"metadata"})
            obs = self.env.step(parsed)
        except InvalidAction as exc:
            self._refuse(rec, t0, 422, str(exc))
        except (EpisodeDone, NotReset) as exc:
            self._refuse(rec, t0, 409, str(exc))
        except Exception as exc:
            err = self._failure(exc)
            rec.refused, rec.infra = str(err), err.kind == "infra"
            rec.duration_s = time.monotonic() - t0
            self.steps.append(rec)
            raise err from exc
        rec.duration_s = time.monotonic() - t0
        rec.observation = ObservationRecord.of(obs)
        rec.reward, rec.done = obs.reward, obs.done
        rec.infra = obs.system_status == "infra_error"
        self.steps.append(rec)
        self.last_obs = obs
        return StepResult(observation=obs, reward=obs.reward, done=obs.done, episode_id=obs.episode_id)

    def state(self) -> State:
        try:
            return self.env.state.model_copy(deep=True)
        except NotReset as exc:
            raise EnvCallError(409, str(exc), "refused") from None

    def close_episode(self) -> None:
        """The runner reads the final state after the agent is done, then closes the env."""
        self.closed = True

    # -- helpers ----------------------------------------------------------------------------
    def _refuse(self, rec: StepRecord, t0: float, status: int, msg: str) -> NoReturn:
        rec.refused, rec.duration_s = msg, time.monotonic() - t0
        self.steps.append(rec)
        raise EnvCallError(status, msg, "refused")

    def _failure(self, exc: Exception) -> EnvCallError:
        kind = "infra" if is_infra_exception(exc) else "env"
        err = EnvCallError(503 if kind == "infra" else 500, f"{type(exc).__name__}: {exc}", kind)
        if self.env_error is None:
            self.env_error = err
        return err

    def _check_stop(self) -> None:
        if self.stop.is_set():
            self.interrupted = True
            raise EnvCallError(503, "the evaluation is being interrupted", "interrupted")
