"""The warm pool: started, idle run containers kept ready so creation is off the episode's path.

A taken box is checked to be still running (an engine restart kills idle containers); a
removal that fails (engine down) is retried on a later take, so nothing is leaked.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

from .containers import Box

log = logging.getLogger(__name__)


class WarmPool:
    """Up to ``size`` idle boxes made by ``create``; refilled in the background."""

    def __init__(self, create: Callable[[], Box], size: int, errors: Any) -> None:
        self._create = create
        self.size = size
        self._errors = errors  # docker.errors
        self._boxes: queue.Queue[Box] = queue.Queue()
        self._lock = threading.Lock()
        self._orphans: list[Any] = []  # containers / volumes whose removal failed
        self._closed = False

    def refill(self) -> None:
        """Top the pool up in a background thread."""
        def work() -> None:
            with self._lock:
                while not self._closed and self._boxes.qsize() < self.size:
                    try:
                        self._boxes.put(self._create())
                    except Exception as exc:  # the next take() creates synchronously
                        log.warning("warm pool refill failed: %s", exc)
                        return
        threading.Thread(target=work, daemon=True).start()

    def take(self) -> Box:
        """A started box: a warm one if it is still running, else a new one (may raise)."""
        while True:
            try:
                box = self._boxes.get_nowait()
            except queue.Empty:
                box = self._create()
                break
            try:
                box.container.reload()
                if box.container.status == "running":
                    break
            except self._errors.DockerException:
                pass
            self.destroy(box)
        self._remove_orphans()
        self.refill()
        return box

    def destroy(self, box: Box) -> None:
        """Remove a box; what cannot be removed now (engine down) is retried on the next take."""
        for obj in (box.container, *box.volumes):
            self._remove(obj, warn=True)

    def _remove(self, obj: Any, warn: bool = False) -> None:
        try:
            obj.remove(force=True)
        except self._errors.NotFound:
            pass
        except Exception as exc:
            if warn:
                log.warning("could not remove %s (will retry): %s", obj, exc)
            with self._lock:
                self._orphans.append(obj)

    def _remove_orphans(self) -> None:
        with self._lock:
            orphans, self._orphans = self._orphans, []
        for obj in orphans:
            self._remove(obj)

    def close(self) -> None:
        """Stop refilling and remove every idle box."""
        self._closed = True
        while True:
            try:
                self.destroy(self._boxes.get_nowait())
            except queue.Empty:
                break
