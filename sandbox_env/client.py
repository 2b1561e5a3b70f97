"""Typed HTTP client for a sandbox-env server, used by agents, the eval runner and tests."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from .actions import ActionModel
from .errors import ERRORS, EnvError, class_for
from .models import State, StepResult


class EnvClientError(EnvError):
    """The server refused a request: its HTTP status, message and stable error code.

    An EnvError like the in-process ones, so callers decide with ``errors.ERRORS[code]``
    whichever way the episode is carried; ``code`` is the server's (see errors.py).
    """

    status: int = 0  # the server's status, not the table's: a proxy may answer on its own

    def __init__(self, status: int, detail: str, code: str | None = None) -> None:
        super().__init__(f"HTTP {status}: {detail}")
        self.status, self.detail = status, detail
        fallback = "SANDBOX_UNAVAILABLE" if status >= 500 else "VALIDATION_ERROR"
        self.code = code if code in ERRORS else fallback

    @classmethod
    def of(cls, status: int, detail: str, code: str | None) -> EnvClientError:
        """The error for a server reply: also an instance of the class that owns its code
        (``except UnknownTask`` catches a remote unknown task as it does an in-process one)."""
        err = cls(status, detail, code)
        err.__class__ = _remote_class(cls, err.code)
        return err


_REMOTE_CLASSES: dict[tuple[type, str], type] = {}


def _remote_class(base: type[EnvClientError], code: str) -> type[EnvClientError]:
    key = (base, code)
    if key not in _REMOTE_CLASSES:
        owner = class_for(code)
        _REMOTE_CLASSES[key] = type(f"Remote{owner.__name__}", (base, owner), {"__str__": Exception.__str__})
    return _REMOTE_CLASSES[key]  # type: ignore[return-value]


class TriageClient:
    """The episode protocol (protocol.Episode) over HTTP: one episode at a time, the id
    remembered after reset. ``close()`` ends the live episode and the connection."""

    def __init__(self, base_url: str, timeout: float = 900.0) -> None:
        self._http = httpx.Client(base_url=base_url.rstrip("/"), timeout=timeout)
        self.episode_id: str | None = None

    def _call(self, method: str, path: str, **kw: Any) -> Any:
        r = self._http.request(method, path, **kw)
        if r.status_code >= 400:
            try:
                body = r.json()
                detail, code = body.get("detail", r.text), body.get("code")
            except (ValueError, AttributeError):
                detail, code = r.text, None
            raise EnvClientError.of(r.status_code, str(detail), code)
        return r.json()

    def reset(self, task: str | None = None, seed: int | None = None,
              episode_id: str | None = None, compact: bool = False) -> StepResult:
        """Start an episode. The client names it (a fresh id unless given), so no id-less reset
        by another client can ever replace it; ``compact`` asks for the compact observation."""
        body: dict[str, Any] = {"episode_id": episode_id or self.episode_id or uuid.uuid4().hex}
        body.update({k: v for k, v in {"task": task, "seed": seed}.items() if v is not None})
        if compact:
            body["compact"] = True
        res = StepResult.model_validate(self._call("POST", "/reset", json=body))
        self.episode_id = res.episode_id
        return res

    def step(self, action: dict[str, Any] | ActionModel) -> StepResult:
        if isinstance(action, ActionModel):
            action = action.model_dump(mode="json")
        body = {"action": action, "episode_id": self.episode_id}
        return StepResult.model_validate(self._call("POST", "/step", json=body))

    def state(self) -> State:
        return State.model_validate(self._call("GET", "/state", params={"episode_id": self.episode_id}))

    def close_episode(self) -> None:
        """End the live episode on the server (an already expired one is fine)."""
        if self.episode_id:
            eid, self.episode_id = self.episode_id, None
            try:
                self._call("POST", "/close", json={"episode_id": eid})
            except EnvClientError as exc:
                if exc.code != "UNKNOWN_EPISODE":
                    raise

    def health(self) -> dict[str, Any]:
        return self._call("GET", "/health")

    def tasks(self) -> list[dict[str, Any]]:
        return self._call("GET", "/tasks")

    def close(self) -> None:
        try:
            self.close_episode()
        except (EnvClientError, httpx.HTTPError):
            pass  # the server is gone or refused: its idle reaper frees the episode
        finally:
            self._http.close()

    def __enter__(self) -> TriageClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
