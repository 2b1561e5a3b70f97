"""Copying files into and out of a container through the archive API (tar streams)."""

from __future__ import annotations

import io
import tarfile
import time
from typing import Any

from ...workspace import BLOB_FILE_BYTES, MAX_FILE_BYTES
from .containers import Box


def tar(files: dict[str, bytes], uid: int, mode: int = 0o644) -> bytes:
    """A tar stream of ``files`` (relative paths), owned by ``uid``, parent dirs included."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        dirs: set[str] = set()
        for rel, data in sorted(files.items()):
            parts = rel.split("/")[:-1]
            for i in range(1, len(parts) + 1):
                d = "/".join(parts[:i])
                if d not in dirs:
                    dirs.add(d)
                    ti = tarfile.TarInfo(d)
                    ti.type, ti.mode, ti.uid, ti.gid = tarfile.DIRTYPE, 0o755 if uid else 0o700, uid, uid
                    tf.addfile(ti)
            ti = tarfile.TarInfo(rel)
            ti.size, ti.mode, ti.uid, ti.gid, ti.mtime = len(data), mode, uid, uid, int(time.time())
            tf.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


def untar_text(raw: bytes) -> tuple[dict[str, str], dict[str, bytes], set[str], list[str]]:
    """Text files of a tar stream (paths relative to the archived dir), binary files, skipped
    paths (binary ones included), notes."""
    files: dict[str, str] = {}
    blobs: dict[str, bytes] = {}
    skipped: set[str] = set()
    notes: list[str] = []
    with tarfile.open(fileobj=io.BytesIO(raw)) as tf:
        for m in tf.getmembers():
            name = m.name.split("/", 1)[1] if "/" in m.name else ""
            if not name or "__pycache__" in name.split("/") or m.isdir():
                continue
            if m.issym() or m.islnk():
                skipped.add(name)
                notes.append(f"skipped link {name}")
                continue
            if not m.isfile():
                continue
            if m.size > max(MAX_FILE_BYTES, BLOB_FILE_BYTES):
                skipped.add(name)
                notes.append(f"skipped {name} (larger than {max(MAX_FILE_BYTES, BLOB_FILE_BYTES)} bytes)")
                continue
            f = tf.extractfile(m)
            data = f.read() if f else b""
            try:
                text = data.decode()
            except UnicodeDecodeError:
                skipped.add(name)
                blobs[name] = data
                continue
            if m.size > MAX_FILE_BYTES:
                skipped.add(name)
                notes.append(f"skipped {name} (larger than {MAX_FILE_BYTES} bytes)")
                continue
            files[name] = text
    return files, blobs, skipped, notes


def put_files(box: Box, dest: str, files: dict[str, bytes], uid: int, mode: int = 0o644) -> None:
    """Copy ``files`` under ``dest`` in the box's container."""
    box.container.put_archive(dest, tar(files, uid, mode))


def get_text_files(box: Box, src: str) -> tuple[dict[str, str], dict[str, bytes], set[str], list[str]]:
    """The text and binary files under ``src`` in the container (see ``untar_text``)."""
    bits: Any
    bits, _ = box.container.get_archive(src + "/.")
    return untar_text(b"".join(bits))
