"""Live episodes of one server: creation, lookup by id, per-session locking, idle expiry.

Clients that never send an episode id (the seed's own agent) play episodes in a row: an
id-less ``/reset`` starts an *anonymous* episode and points id-less ``/step`` / ``/state`` at it.
The reset only moves that pointer; it never ends an episode someone may still hold (a client
that reset id-less and steps with the id from the reply). The episode the pointer leaves is
reclaimed when it is finished and was never addressed by its id (the seed's agent, which never
sends ids, plays each episode to its end), when it is idle past the timeout, or, at capacity,
least recently used first. Clients that send ids keep full isolation: nothing here ever answers
them from another episode.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from ..environment import TriageEnvironment
from ..errors import CapacityReached, EpisodeIdRequired, EpisodeInUse, NoEpisode, UnknownEpisode


def _now() -> float:
    return time.monotonic()  # looked up per call (a test's clock replaces time.monotonic)


@dataclass
class Session:
    episode_id: str
    env: TriageEnvironment
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    last_used: float = field(default_factory=_now)
    attached: bool = False  # owned by a WebSocket connection, which closes it
    on_idle: Callable[[], None] | None = None  # how the reaper tells that connection to stop
    idle_expired: bool = False
    anonymous: bool = False  # started by an id-less reset and never addressed by its id since
    # the manager's map, kept in least-recently-used order: a touch moves this session to its end
    index: dict[str, Session] | None = field(default=None, repr=False, compare=False)

    def touch(self) -> None:
        self.last_used = _now()
        index = self.index
        if index is not None and index.get(self.episode_id) is self:
            del index[self.episode_id]
            index[self.episode_id] = self

    @property
    def submitted_or_spent(self) -> bool:
        """Played to its end (not merely never reset, nor closed)."""
        try:
            return self.env.state.done
        except RuntimeError:
            return False

    @property
    def finished(self) -> bool:
        """Done (submitted or out of budget) or closed: such an episode takes no more steps."""
        try:
            return self.env.state.done
        except RuntimeError:  # never reset, or closed
            return True


class SessionManager:
    """Maps episode ids to environments. One manager per app: no module globals.

    Every method runs on the event loop thread and never awaits while it mutates the map,
    so no lock guards it; per-session locks serialise the steps of one episode. The map is kept
    in least-recently-used order (``Session.touch`` moves a session to its end), so expiry and
    eviction at capacity look at the oldest sessions first and stop early instead of scanning
    every live one on each reset.
    """

    def __init__(self, factory: Callable[[], TriageEnvironment], max_sessions: int,
                 idle_timeout_s: float) -> None:
        self._factory = factory
        self.max_sessions = max_sessions
        self.idle_timeout_s = idle_timeout_s
        self._sessions: dict[str, Session] = {}
        self._latest_anonymous: str | None = None  # the episode id-less requests go to
        self.expired = 0

    def __len__(self) -> int:
        return len(self._sessions)

    def open(self, episode_id: str | None, *, attached: bool = False) -> Session:
        """The session for ``episode_id`` (reused on re-reset) or a new one.

        Without an id (and not for a WebSocket) the new session is anonymous: it becomes the
        target of id-less requests; the previous target stays live (:meth:`_move_anonymous`).
        """
        if episode_id and episode_id in self._sessions:
            s = self._sessions[episode_id]
            if s.attached != attached:
                raise EpisodeInUse(f"episode_id {episode_id!r} belongs to "
                                   "another connection; pick another id")
            s.anonymous = False
            return s
        anonymous = not episode_id and not attached
        if anonymous:
            self._move_anonymous()
        if (len(self._sessions) >= self.max_sessions and not self.expire() and not self._evict_finished()
                and not self._evict_superseded()):
            raise CapacityReached(f"CAPACITY_REACHED: {self.max_sessions} episodes are live; close one "
                               "(POST /close or close the WebSocket) or wait for idle ones to expire")
        sid = episode_id or uuid.uuid4().hex
        session = Session(sid, self._factory(), attached=attached, anonymous=anonymous,
                          index=self._sessions)
        self._sessions[sid] = session
        if anonymous:
            self._latest_anonymous = sid
        return session

    def _evict_finished(self) -> bool:
        """At capacity: drop the least recently used finished HTTP episode (it takes no more
        steps; its final state stays readable until then). WebSocket episodes are their
        connection's to close."""
        oldest = next((s for s in self._sessions.values()  # least recently used first
                       if not s.attached and s.submitted_or_spent and not s.lock.locked()), None)
        if oldest is None:
            return False
        del self._sessions[oldest.episode_id]
        oldest.env.close()
        return True

    def _evict_superseded(self) -> bool:
        """At capacity, after finished episodes: drop the least recently used anonymous episode
        that id-less requests no longer reach and that nobody has addressed by its id since."""
        oldest = next((s for s in self._sessions.values()  # least recently used first
                       if s.anonymous and s.episode_id != self._latest_anonymous
                       and not s.lock.locked()), None)
        if oldest is None:
            return False
        del self._sessions[oldest.episode_id]
        oldest.env.close()
        return True

    def _move_anonymous(self) -> None:
        """An id-less reset: id-less requests will go to the new episode. The previous one is
        closed only if it is finished and was never addressed by its id (nobody else can hold
        it: its id was never used); otherwise it stays live until it is finished, idle, or
        evicted at capacity, since the client that reset it may be stepping it by its id."""
        prev = self._sessions.get(self._latest_anonymous or "")
        self._latest_anonymous = None
        if prev is not None and prev.anonymous and prev.submitted_or_spent and not prev.lock.locked():
            del self._sessions[prev.episode_id]
            prev.env.close()

    def rename(self, session: Session, episode_id: str) -> None:
        """Re-key a session (a WebSocket reset that names its own episode id)."""
        if episode_id == session.episode_id:
            return
        if episode_id in self._sessions:
            raise EpisodeInUse(f"episode_id {episode_id!r} is already live")
        del self._sessions[session.episode_id]
        session.episode_id = episode_id
        self._sessions[episode_id] = session
        session.touch()  # it is now the newest entry: its last use says so too

    def get(self, episode_id: str | None) -> Session:
        """Look up a session by id; without one, the episode id-less requests belong to.

        That is the latest anonymous episode if it is live; else the only live HTTP episode
        that is not finished (finished or expired episodes never make a request ambiguous).
        Addressing an anonymous episode by its id makes it named: no id-less reset replaces it.
        Idle sessions are expired by :meth:`reap_forever`, not here: lookups stay O(1).
        """
        if episode_id:
            s = self._sessions.get(episode_id)
            if s is None:
                raise UnknownEpisode(f"unknown episode_id {episode_id!r} "
                                   "(expired or never created); call /reset to start an episode")
            s.anonymous = False
            return s
        latest = self._sessions.get(self._latest_anonymous or "")
        if latest is not None:
            return latest
        live = [s for s in self._sessions.values() if not s.attached and not s.finished]
        if not live:
            raise NoEpisode("no live episode: call /reset first")
        if len(live) > 1:
            raise EpisodeIdRequired(f"{len(live)} episodes are live and none was started without an id: "
                               "give episode_id in the body or the X-Episode-Id header")
        return live[0]

    def detach(self, episode_id: str) -> Session | None:
        """Remove a session from the map; the caller closes its environment."""
        return self._sessions.pop(episode_id, None)

    async def close(self, episode_id: str) -> bool:
        """Remove and close a session, after any step it is running has finished."""
        s = self.detach(episode_id)
        if s is None:
            return False
        async with s.lock:
            s.env.close()
        return True

    def expire(self) -> int:
        """Close sessions idle past the timeout (never one that is mid-step).

        HTTP sessions are closed here; a WebSocket's is signalled through ``on_idle`` and
        closed by its connection, which tells the client why.
        """
        now = time.monotonic()
        stale = []
        for s in self._sessions.values():  # least recently used first: stop at the first recent one
            if now - s.last_used <= self.idle_timeout_s:
                break
            if not s.idle_expired and not s.lock.locked():
                stale.append(s)
        for s in stale:
            s.idle_expired = True
            if s.attached:
                if s.on_idle is not None:
                    s.on_idle()
            else:
                del self._sessions[s.episode_id]
                s.env.close()
        self.expired += len(stale)
        return len(stale)

    async def reap_forever(self) -> None:
        """Background task: expire idle sessions even when no request arrives."""
        period = max(0.05, min(30.0, self.idle_timeout_s / 4))
        while True:
            await asyncio.sleep(period)
            self.expire()

    def close_all(self) -> None:
        for s in list(self._sessions.values()):
            s.env.close()
        self._sessions.clear()
