"""The episode's files: exact edits, diff against the original, path safety, content hash."""

from __future__ import annotations

import ast
import difflib
import hashlib
import os
import posixpath
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, TypeVar

MAX_FILE_BYTES = 1_000_000  # a workspace file larger than this is not taken back from a run
BLOB_FILE_BYTES = 16_000_000  # a binary file a run wrote, kept for the next commands up to this size
BLOB_TOTAL_BYTES = 32_000_000  # and up to this much binary data per workspace
MAX_FILES = 500
T = TypeVar("T")
_IGNORED_PARTS = {"__pycache__", ".pytest_cache", ".git"}


# CPython 3.11's ast.parse is not thread-safe (a shared recursion counter in the AST object
# conversion raises "SystemError: AST constructor recursion depth mismatch" under concurrent
# parses, gh-106905). Sessions step in worker threads, so every Python-level AST build of the
# server (here and in task classifiers) holds this lock.
AST_LOCK = threading.RLock()


def parse_python(text: str) -> ast.Module:
    with AST_LOCK:
        return ast.parse(text)


class _StateMemo:
    """What a pure function of a workspace's files gave, process-wide: workspace fingerprint ->
    value, least recently used first out, thread-safe."""

    _MISSING = object()

    def __init__(self, size: int = 4096) -> None:
        self.size, self.values, self.lock = size, OrderedDict[int, Any](), threading.Lock()

    def get(self, key: int, compute: Callable[[], Any]) -> Any:
        with self.lock:
            found = self.values.get(key, self._MISSING)
            if found is not self._MISSING:
                self.values.move_to_end(key)
                return found
        found = compute()  # outside the lock: other states are served meanwhile
        with self.lock:
            self.values[key] = found
            if len(self.values) > self.size:
                self.values.popitem(last=False)
        return found


_HASHES = _StateMemo()  # fingerprint -> content_hash
_SYNTAX_STATES = _StateMemo()  # fingerprint -> the first syntax error, or None


class WorkspaceError(ValueError):
    """An action on the workspace that cannot be carried out; the message is for the agent."""


def safe_path(path: str) -> str:
    """Normalise a workspace-relative path or raise WorkspaceError.

    Absolute paths, ``..`` escapes, NUL bytes, backslashes and hidden checks are refused.
    """
    if not path or "\x00" in path or "\\" in path:
        raise WorkspaceError(f"invalid path {path!r}")
    if path.startswith("/") or re.match(r"^[A-Za-z]:", path):
        raise WorkspaceError(f"absolute paths are not allowed ({path!r}); "
                             "use a path relative to the workspace root")
    norm = posixpath.normpath(path)
    if norm.startswith("./"):
        norm = norm[2:]
    if norm == ".." or norm.startswith("../") or norm == ".":
        raise WorkspaceError(f"path {path!r} is outside the workspace")
    if _IGNORED_PARTS.intersection(norm.split("/")):
        raise WorkspaceError(f"path {path!r} is not part of the workspace")
    return norm


class _FileMemo(Generic[T]):
    """A bounded LRU of a pure function of one file, keyed by its path and a digest of its text
    (an edit re-derives only the file it changed; a collision would need a BLAKE2 collision)."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._items: OrderedDict[tuple[str, bytes], T] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, path: str, text: str, compute: Callable[[str, str], T]) -> T:
        key = (path, hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=20).digest())
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        value = compute(path, text)
        with self._lock:
            self._items[key] = value
            if len(self._items) > self._size:
                self._items.popitem(last=False)
        return value


_NORMALISED: _FileMemo[str] = _FileMemo(1024)
_SYNTAX: _FileMemo[str | None] = _FileMemo(8192)
_DIFFS: _FileMemo[str] = _FileMemo(1024)


def normalised_source(path: str, text: str) -> str:
    """Text that ignores comments and formatting for Python, line endings for the rest."""
    return _NORMALISED.get(path, text, _normalise)


def _normalise(path: str, text: str) -> str:
    if path.endswith(".py"):
        try:
            return ast.dump(parse_python(text), include_attributes=False)
        except (SyntaxError, ValueError):
            pass
    return "\n".join(line.rstrip() for line in text.replace("\r\n", "\n").split("\n")).strip()


def content_hash(files: dict[str, str]) -> str:
    """Stable hash of a workspace's behaviour-relevant content (comment-insensitive)."""
    h = hashlib.sha256()
    for path in sorted(files):
        h.update(path.encode())
        h.update(b"\x00")
        h.update(normalised_source(path, files[path]).encode())
        h.update(b"\x01")
    return h.hexdigest()[:16]


def syntax_error(path: str, text: str) -> str | None:
    """The syntax error of a whole Python file, or None (non-Python files: None)."""
    if not path.endswith(".py"):
        return None
    return _SYNTAX.get(path, text, _compile_error)


def _compile_error(path: str, text: str) -> str | None:
    try:
        compile(text, path, "exec", dont_inherit=True)
    except SyntaxError as exc:
        line = (exc.text or "").rstrip()
        return f"{path}:{exc.lineno}: SyntaxError: {exc.msg}" + (f"\n    {line}" if line else "")
    except ValueError as exc:
        return f"{path}: {exc}"
    return None


def unified_diff(old: dict[str, str], new: dict[str, str], only: str | None = None) -> str:
    paths = sorted(set(old) | set(new))
    if only is not None:
        paths = [p for p in paths if p == only]
    chunks: list[str] = []
    for p in paths:
        a, b = old.get(p), new.get(p)
        if a == b:
            continue
        # one memo entry per (path, old, new): the NUL-separated pair is the key's text
        pair = ("\x00" if a is None else "\x01" + a) + "\x00\x00" + ("\x00" if b is None else "\x01" + b)
        chunks.append(_DIFFS.get(p, pair, lambda _p, _t, a=a, b=b, p=p: _file_diff(p, a, b)))
    out = "".join(chunks)
    return out if out.endswith("\n") or not out else out + "\n"


def _file_diff(p: str, a: str | None, b: str | None) -> str:
    return "".join(difflib.unified_diff(
        (a or "").splitlines(keepends=True), (b or "").splitlines(keepends=True),
        fromfile="/dev/null" if a is None else f"a/{p}", tofile="/dev/null" if b is None else f"b/{p}"))


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def apply_patch(files: dict[str, str], patch: str) -> dict[str, str]:
    """Apply a unified diff (a/ b/ prefixes, as `diff -ruN` writes) strictly; returns new files."""
    out = dict(files)
    lines = patch.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        if not lines[i].startswith("--- "):
            i += 1
            continue
        src = lines[i][4:].split("\t")[0].strip()
        dst = lines[i + 1][4:].split("\t")[0].strip()
        i += 2
        target = dst if dst != "/dev/null" else src
        path = safe_path(target.split("/", 1)[1] if "/" in target else target)
        old_text = out.get(path, "")
        old_lines = old_text.splitlines(keepends=True)
        result: list[str] = []
        cursor = 0
        while i < len(lines) and lines[i].startswith("@@"):
            m = _HUNK.match(lines[i])
            if not m:
                raise WorkspaceError(f"bad hunk header: {lines[i]!r}")
            start = int(m.group(1)) - (0 if m.group(2) == "0" else 1)
            want_old = int(m.group(2) or 1)
            want_new = int(m.group(4) or 1)
            i += 1
            result.extend(old_lines[cursor:start])
            cursor = start
            while i < len(lines) and (want_old > 0 or want_new > 0 or lines[i].startswith("\\")):
                tag, body = lines[i][:1], lines[i][1:]
                if tag not in (" ", "-", "+", "\\"):
                    raise WorkspaceError(f"malformed hunk in the patch for {path}: {lines[i]!r}")
                want_old -= tag in (" ", "-")
                want_new -= tag in (" ", "+")
                if tag == "\\":
                    if result and result[-1].endswith("\n"):
                        result[-1] = result[-1][:-1]
                elif tag in (" ", "-"):
                    have = old_lines[cursor] if cursor < len(old_lines) else None
                    if have is None or have.rstrip("\n") != body.rstrip("\n"):
                        raise WorkspaceError(f"patch does not apply to {path} near line {cursor + 1}")
                    cursor += 1
                    if tag == " ":
                        result.append(have)
                else:
                    result.append(body)
                i += 1
        result.extend(old_lines[cursor:])
        if dst == "/dev/null":
            out.pop(path, None)
        else:
            out[path] = "".join(result)
    return out


UNTRACKED_LISTED = 40  # files only runs wrote, listed by name in a review diff


class Workspace:
    """The files of one episode, in memory; the original is kept for diffs."""

    def __init__(self, files: dict[str, str]) -> None:
        self.original = dict(files)
        self.files = dict(files)
        self.created: set[str] = set()  # files the agent created by editing (runs' files are not)
        # binary files runs wrote (checkpoints, arrays): the next commands see them, as in a shell;
        # they are no part of the fix (no diff, no content hash, never given to a verification)
        self.blobs: dict[str, bytes] = {}
        # the episode's last run of the task's command, when it exited 0 on these files with no
        # binary file present and changed none of them: (their bytes' hash, seconds). A
        # verification of exactly those bytes takes it for its own run from the workspace
        self.clean_run: tuple[str, float] | None = None
        self._memo: dict[str, tuple[int, Any]] = {}  # name -> (fingerprint of the files, value)

    def paths(self) -> list[str]:
        return sorted(self.files)

    def read(self, path: str) -> str:
        p = safe_path(path)
        if p not in self.files:
            raise WorkspaceError(f"no such file: {p}. Files: {', '.join(self.paths())}")
        return self.files[p]

    def edit(self, path: str, old: str, new: str) -> str:
        """Replace the single exact occurrence of ``old``; returns the normalised path.

        An empty ``old`` creates a file that does not exist yet and is refused otherwise.
        """
        p = safe_path(path)
        if p not in self.files:
            if old:
                raise WorkspaceError(f"no such file: {p}. Files: {', '.join(self.paths())}")
            if len(self.files) >= MAX_FILES:
                raise WorkspaceError(f"the workspace already holds {MAX_FILES} files")
            self.files[p] = new
            self.created.add(p)
            return p
        if not old:
            raise WorkspaceError(
                "old_str is empty: give the exact text to replace (copy it from read_file)"
            )
        if old == new:
            raise WorkspaceError("old_str and new_str are identical: nothing would change")
        text = self.files[p]
        count = text.count(old)
        if count == 0:
            raise WorkspaceError(f"old_str not found in {p}.{_nearest(text, old)}")
        if count > 1:
            raise WorkspaceError(
                f"old_str occurs {count} times in {p}; include more surrounding lines so it is unique"
            )
        self.files[p] = text.replace(old, new, 1)
        return p

    def diff(self, path: str | None = None) -> str:
        only = safe_path(path) if path else None
        return unified_diff(self.original, self.files, only)

    def review_diff(self, path: str | None = None) -> str:
        """What ``git diff`` and ``git status`` show an engineer: the diff of the repo's files
        and of files created by edits; files only runs wrote (data, logs, exports) are listed
        by name, not diffed (naming one shows its diff)."""
        if path:
            return self.diff(path)
        shown = {p: t for p, t in self.files.items() if p in self.original or p in self.created}
        out = unified_diff(self.original, shown)
        untracked = sorted([p for p in self.files if p not in self.original and p not in self.created]
                           + list(self.blobs))
        if untracked:
            names = "".join(f"  {p}\n" for p in untracked[:UNTRACKED_LISTED])
            more = len(untracked) - UNTRACKED_LISTED
            head = f"Untracked files written by runs ({len(untracked)}, not diffed):\n"
            out += ("\n" if out else "") + head + names + (f"  ... and {more} more\n" if more > 0 else "")
        return out

    def changed_paths(self) -> list[str]:
        keys = set(self.original) | set(self.files)
        return sorted(k for k in keys if self.original.get(k) != self.files.get(k))

    def content_hash(self) -> str:
        """content_hash(self.files), memoised per workspace and process-wide: str objects cache
        their own hash, so the fingerprint costs O(files) while the AST-normalised hash of a
        state (e.g. a task's pristine files at every reset) is computed once per process."""
        return self._memoised("hash", _HASHES, lambda: content_hash(self.files))

    def exact_hash(self) -> str:
        """The files' bytes, hashed (``content_hash`` ignores comments and formatting)."""
        h = hashlib.sha256()
        for p in sorted(self.files):
            h.update(f"{len(p)}:{p}{len(self.files[p])}:".encode() + self.files[p].encode())
        return h.hexdigest()

    def note_run(self, before: str | None, passed: bool, duration_s: float) -> None:
        """The task's command ran from the bytes hashed ``before`` (``exact_hash``; None: binary
        files were present) and ``passed``: a clean run if it also left the bytes as they were."""
        clean = passed and before is not None and self.exact_hash() == before
        self.clean_run = (before, duration_s) if clean and before is not None else None

    def ran_clean(self) -> float | None:
        """The seconds of the episode's last run of the task's command if it ran clean on exactly
        the current bytes (``clean_run``), else None."""
        if self.clean_run is None or self.clean_run[0] != self.exact_hash():
            return None
        return self.clean_run[1]

    def first_syntax_error(self) -> str | None:
        """The syntax error of the first file (in path order) that does not compile, or None;
        memoised per workspace and process-wide, like content_hash (and each file's check)."""
        return self._memoised("syntax", _SYNTAX_STATES, lambda: next(
            (e for p in self.paths() if (e := syntax_error(p, self.files[p]))), None))

    def _memoised(self, name: str, memo: _StateMemo, compute: Callable[[], Any]) -> Any:
        """``compute()`` for the current files: kept on the workspace while its files stay the
        same, and in ``memo`` by their fingerprint for every workspace of this process."""
        key = hash(frozenset((p, hash(t)) for p, t in self.files.items()))
        mine = self._memo.get(name)
        if mine is None or mine[0] != key:
            mine = self._memo[name] = (key, memo.get(key, compute))
        return mine[1]

    def apply_patch(self, patch: str) -> None:
        self.files = apply_patch(self.files, patch)

    # -- disk round trip (used by real sandboxes) ---------------------------------------
    def write_to(self, root: Path, *, blobs: bool = True) -> None:
        """The files (and, unless ``blobs`` is false, the binary files runs wrote) under ``root``."""
        for rel, data in [*self.files.items(), *(self.blobs.items() if blobs else ())]:
            dest = root / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data if isinstance(data, bytes) else data.encode())

    def take_blobs(self, found: dict[str, bytes]) -> list[str]:
        """Keep the binary files a run left (all of them: those it removed are gone), within
        BLOB_FILE_BYTES each and BLOB_TOTAL_BYTES together; notes for those not kept."""
        self.blobs, notes, total = {}, [], 0
        for rel, data in sorted(found.items()):
            if len(data) > BLOB_FILE_BYTES or total + len(data) > BLOB_TOTAL_BYTES:
                notes.append(f"binary file {rel} ({len(data)} bytes) not kept for the next commands "
                             f"(at most {BLOB_FILE_BYTES} bytes a file, {BLOB_TOTAL_BYTES} in all)")
                continue
            self.blobs[rel] = data
            total += len(data)
        return notes

    def sync(self, after: dict[str, str], kept: frozenset[str] | set[str] = frozenset()) -> dict[str, str]:
        """Make the workspace equal ``after`` (the files a run left), returning what changed.

        Paths in ``kept`` still exist but could not be taken back (binary, link, too big):
        they keep their old content instead of being removed.
        """
        changed = {p: t for p, t in after.items() if self.files.get(p) != t}
        for gone in [p for p in self.files if p not in after and p not in kept]:
            del self.files[gone]
        self.files.update(changed)
        return changed

    def absorb(self, root: Path) -> tuple[dict[str, str], list[str]]:
        """Take back the text files a run left under ``root``: (changed files, notes); binary
        files become ``blobs`` (``take_blobs``).

        Symlinks and oversized files are skipped with a note; files that disappeared are removed.
        """
        after: dict[str, str] = {}
        blobs: dict[str, bytes] = {}
        skipped: set[str] = set()
        notes: list[str] = []
        for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
            dirnames[:] = [d for d in dirnames if d not in _IGNORED_PARTS]
            for name in filenames:
                full = Path(dirpath) / name
                rel = full.relative_to(root).as_posix()
                skipped.add(rel)
                if full.is_symlink():
                    notes.append(f"skipped symlink {rel}")
                elif full.stat().st_size > max(MAX_FILE_BYTES, BLOB_FILE_BYTES):
                    notes.append(f"skipped {rel} (larger than {max(MAX_FILE_BYTES, BLOB_FILE_BYTES)} bytes)")
                else:
                    data = full.read_bytes()
                    try:
                        text = data.decode()
                    except UnicodeDecodeError:
                        blobs[rel] = data
                        continue
                    if len(data) > MAX_FILE_BYTES:
                        notes.append(f"skipped {rel} (larger than {MAX_FILE_BYTES} bytes)")
                        continue
                    after[rel] = text
                    skipped.discard(rel)
        notes += self.take_blobs(blobs)
        return self.sync(after, skipped | set(blobs)), notes


def _nearest(text: str, old: str) -> str:
    """A hint showing the lines of ``text`` closest to the first line of ``old``."""
    first = next((ln for ln in old.splitlines() if ln.strip()), old).strip()
    lines = text.splitlines()
    scored = sorted(
        ((difflib.SequenceMatcher(None, first, ln.strip()).ratio(), n) for n, ln in enumerate(lines)),
        reverse=True,
    )[:3]
    picks = [(n, lines[n]) for r, n in scored if r > 0.5]
    if not picks:
        return " No similar line exists; read the file first."
    shown = "\n".join(f"  {n + 1:4d}| {ln}" for n, ln in sorted(picks))
    return f" Nearest lines (check whitespace and exact characters):\n{shown}"
