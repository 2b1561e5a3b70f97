"""Reference results kept host-side, per drawn knob set, so most verifications skip the
reference fix's run.

A verification compares the submitted code with the reference fix run under the same freshly
drawn knobs. That run depends only on the draw and the check files, so its results can be
reused: each task's check (by the digest of its files) has ``SLOTS`` slots; a verification takes
a slot whose draw has results and uses left if there is one, else a slot at random (os.urandom),
drawing into it if it is empty or worn out (``USES`` verifications); it gets the draw in
``draw.json``, with the reference's results once an earlier verification of that draw computed
them. The check then skips the reference run; otherwise it runs it and sends
its results back in the verdict frame, which only the host can read.

What agent code can reach is unchanged: the draw and the results sit in the root-only check dir
until the check has read them, before any agent code starts, as the reference fix itself does.
What changes is that a draw serves up to ``USES`` verifications of one check instead of one
(the draws stay uniform over the task's knobs; a worn-out slot is drawn afresh).

Pools are keyed by the check's digest and the sandbox's identity (image, runtime, torch: what a
run's results depend on), and kept in memory and, so that a later server, evaluation or
certification starts warm, in a host directory no sandbox mounts: ``SANDBOX_ENV_REFERENCE_BANK``
names it (default ``$XDG_CACHE_HOME/sandbox-env/reference-bank``), ``memory`` keeps pools in
this process only, ``off`` turns the bank off.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import secrets
import threading
from collections import OrderedDict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..kit.check_kit import draw as draw_verification
from ..suite.tasks import files_digest

SLOTS = 16  # draws kept per check
USES = 8  # verifications a draw serves before it is drawn afresh
CHECKS_KEPT = 128  # checks (task variants x check digests) with a pool, least recently used dropped
_RNG = secrets.SystemRandom()
log = logging.getLogger(__name__)


def bank_dir() -> Path | bool | None:
    """Where pools persist (a directory), None (memory only) or False (no bank), from the environment."""
    where = os.environ.get("SANDBOX_ENV_REFERENCE_BANK", "").strip()
    if where.lower() in ("off", "0", "no", "false"):
        return False
    if where.lower() == "memory":
        return None
    if where:
        return Path(where)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "sandbox-env" / "reference-bank"


@dataclass
class _Entry:
    draw: dict[str, Any]
    payload: dict[str, Any] | None = None
    uses: int = 0


@dataclass
class Draw:
    """One verification's draw, taken from a slot; ``file()`` is its ``draw.json``."""

    entry: _Entry
    reference: dict[str, Any] | None  # the reference's results when taken, if known
    key: str = ""  # the pool's

    def file(self) -> bytes:
        return json.dumps({**self.entry.draw, "reference": self.reference}).encode()


class ReferenceBank:
    """Draws and reference results per check (thread-safe: episodes share a sandbox).

    ``scope``: what the sandbox's runs depend on besides the check (its provenance: image,
    runtime, torch); ``where``: a directory to persist pools in, None for memory only, False
    for no bank (default: ``bank_dir()``)."""

    def __init__(self, scope: dict[str, Any] | None = None, *, slots: int = SLOTS, uses: int = USES,
                 where: Path | bool | None = True) -> None:
        self.where = bank_dir() if where is True else where
        self.enabled = self.where is not False
        self.slots, self.uses = slots, uses
        ident = json.dumps(scope or {}, sort_keys=True, default=str).encode()
        self.scope = hashlib.sha256(ident).hexdigest()[:12]
        self._pools: OrderedDict[str, list[_Entry | None]] = OrderedDict()
        self._lock = threading.Lock()

    def take(self, files: dict[str, bytes]) -> Draw | None:
        """A draw for one verification of the check made of ``files`` (None: the bank is off)."""
        if not self.enabled or "verify.json" not in files:
            return None
        verify = json.loads(files["verify.json"])["verify"]
        key = f"{files_digest(files).removeprefix('sha256:')}-{self.scope}"
        with self._lock:
            pool = self._pools.pop(key, None) or self._load(key)
            self._pools[key] = pool
            while len(self._pools) > CHECKS_KEPT:
                self._pools.popitem(last=False)
            # a draw whose results are known serves first (until worn out), so a bank warms at once
            ready = [j for j, e in enumerate(pool) if e is not None and e.payload is not None
                     and e.uses < self.uses]
            i = _RNG.choice(ready) if ready else _RNG.randrange(self.slots)
            entry = pool[i]
            if entry is None or entry.uses >= self.uses:
                entry = pool[i] = _Entry(draw_verification(verify))
            entry.uses += 1
            self._save(key, pool)
            return Draw(entry, entry.payload, key)

    def keep(self, d: Draw | None, payload: Any) -> None:
        """The reference's results under ``d``'s draw, from a check that ran it."""
        if d is None or not isinstance(payload, dict) or not {"reports", "states"} <= set(payload):
            return
        with self._lock:
            if d.entry.payload is None:
                d.entry.payload = payload
                pool = self._pools.get(d.key)
                if pool is not None and d.entry in pool:
                    self._save(d.key, pool)

    # -- persistence ------------------------------------------------------------------------
    def _file(self, key: str) -> Path | None:
        return self.where / f"{key}.json" if isinstance(self.where, Path) else None

    def _load(self, key: str) -> list[_Entry | None]:
        pool: list[_Entry | None] = [None] * self.slots
        path = self._file(key)
        if path is None or not path.is_file():
            return pool
        try:
            for i, e in enumerate(json.loads(path.read_text())["slots"][: self.slots]):
                pool[i] = _Entry(e["draw"], e.get("payload"), int(e["uses"])) if e else None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("reference bank %s unreadable (%s): starting it afresh", path, exc)
            return [None] * self.slots
        return pool

    def _save(self, key: str, pool: list[_Entry | None]) -> None:
        path = self._file(key)
        if path is None:
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
            tmp.write_text(json.dumps({"slots": [asdict(e) if e else None for e in pool]}))
            os.replace(tmp, path)
        except OSError as exc:  # a bank that cannot persist still serves this process
            log.warning("reference bank %s not saved: %s", path, exc)
