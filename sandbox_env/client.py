"""Typed HTTP client for a sandbox-env server, used by agents, the eval runner and tests."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from .models import State, StepResult


class EnvClientError(RuntimeError):
    """The server refused a request; carries the HTTP status and its message."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(f"HTTP {status}: {detail}")
        self.status, self.detail = status, detail


class TriageClient:
    """One episode at a time over HTTP; the episode id is remembered after reset."""

    def __init__(self, base_url: str, timeout: float = 900.0) -> None:
        self._http = httpx.Client(base_url=base_url.rstrip("/"), timeout=timeout)
        self.episode_id: str | None = None

    def _call(self, method: str, path: str, **kw: Any) -> Any:
        r = self._http.request(method, path, **kw)
        if r.status_code >= 400:
            try:
                detail = r.json().get("detail", r.text)
            except ValueError:
                detail = r.text
            raise EnvClientError(r.status_code, str(detail))
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

    def step(self, action: dict[str, Any]) -> StepResult:
        body = {"action": action, "episode_id": self.episode_id}
        return StepResult.model_validate(self._call("POST", "/step", json=body))

    def state(self) -> State:
        return State.model_validate(self._call("GET", "/state", params={"episode_id": self.episode_id}))

    def close_episode(self) -> None:
        if self.episode_id:
            self._call("POST", "/close", json={"episode_id": self.episode_id})
            self.episode_id = None

    def health(self) -> dict[str, Any]:
        return self._call("GET", "/health")

    def tasks(self) -> list[dict[str, Any]]:
        return self._call("GET", "/tasks")

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> TriageClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
