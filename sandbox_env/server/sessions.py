"""Live episodes of one server: creation, lookup by id, per-session locking, idle expiry."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from ..environment import TriageEnvironment


class SessionError(Exception):
    """A session lookup that cannot be satisfied; ``status`` is the HTTP status to answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class Session:
    episode_id: str
    env: TriageEnvironment
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    last_used: float = field(default_factory=time.monotonic)

    def touch(self) -> None:
        self.last_used = time.monotonic()


class SessionManager:
    """Maps episode ids to environments. One manager per app: no module globals."""

    def __init__(self, factory: Callable[[], TriageEnvironment], max_sessions: int,
                 idle_timeout_s: float) -> None:
        self._factory = factory
        self.max_sessions = max_sessions
        self.idle_timeout_s = idle_timeout_s
        self._sessions: dict[str, Session] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def open(self, episode_id: str | None) -> Session:
        """The session for ``episode_id`` (reused on re-reset) or a new one."""
        self.expire()
        if episode_id and episode_id in self._sessions:
            return self._sessions[episode_id]
        if len(self._sessions) >= self.max_sessions:
            raise SessionError(503, f"CAPACITY_REACHED: {self.max_sessions} episodes are live; "
                                    "close one (POST /close) or wait for idle ones to expire")
        sid = episode_id or uuid.uuid4().hex
        session = Session(sid, self._factory())
        self._sessions[sid] = session
        return session

    def get(self, episode_id: str | None) -> Session:
        """Look up a session; without an id only when exactly one episode is live."""
        self.expire()
        if episode_id:
            s = self._sessions.get(episode_id)
            if s is None:
                raise SessionError(404, f"unknown episode_id {episode_id!r} (expired or never "
                                        "created); call /reset to start an episode")
            return s
        if not self._sessions:
            raise SessionError(400, "no live episode: call /reset first")
        if len(self._sessions) > 1:
            raise SessionError(400, f"{len(self._sessions)} episodes are live: give episode_id "
                                    "in the body or the X-Episode-Id header")
        return next(iter(self._sessions.values()))

    def close(self, episode_id: str) -> bool:
        s = self._sessions.pop(episode_id, None)
        if s is not None:
            s.env.close()
        return s is not None

    def expire(self) -> int:
        now = time.monotonic()
        stale = [k for k, s in self._sessions.items()
                 if now - s.last_used > self.idle_timeout_s and not s.lock.locked()]
        for k in stale:
            self.close(k)
        return len(stale)

    def close_all(self) -> None:
        for k in list(self._sessions):
            self.close(k)
