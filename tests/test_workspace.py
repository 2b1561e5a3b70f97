"""Workspace: exact edits, path confinement, diffs, patches, the content hash."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sandbox_env.workspace import (
    Workspace,
    WorkspaceError,
    apply_patch,
    content_hash,
    safe_path,
    syntax_error,
    unified_diff,
)

FILES = {"train.py": "import torch\n\nloss = 0\nloss = 0\nfor x in data:\n    total += x\n",
         "pkg/model.py": "class M:\n    pass\n"}


@pytest.mark.parametrize("bad", ["../etc/passwd", "/etc/passwd", "a/../../x", "..", ".", "",
                                 "a\x00b", "C:\\x", "__pycache__/x.pyc", "sub/.git/config"])
def test_paths_outside_the_workspace_are_refused(bad: str) -> None:
    with pytest.raises(WorkspaceError):
        safe_path(bad)


def test_paths_are_normalised() -> None:
    assert safe_path("./pkg//model.py") == "pkg/model.py"
    assert safe_path("pkg/../train.py") == "train.py"


def test_empty_old_str_is_refused_on_existing_file() -> None:
    ws = Workspace(FILES)
    with pytest.raises(WorkspaceError, match="old_str is empty"):
        ws.edit("train.py", "", "x")
    assert ws.files == FILES


def test_non_unique_match_reports_count() -> None:
    ws = Workspace(FILES)
    with pytest.raises(WorkspaceError, match="occurs 2 times"):
        ws.edit("train.py", "loss = 0\n", "loss = 1\n")


def test_miss_shows_nearest_lines() -> None:
    ws = Workspace(FILES)
    with pytest.raises(WorkspaceError) as err:
        ws.edit("train.py", "  total +=  x", "total += float(x)")
    assert "Nearest lines" in str(err.value) and "6|" in str(err.value)


def test_unique_edit_and_diff() -> None:
    ws = Workspace(FILES)
    ws.edit("train.py", "    total += x\n", "    total += float(x)\n")
    d = ws.diff()
    assert "-    total += x" in d and "+    total += float(x)" in d and "a/train.py" in d
    assert ws.diff("pkg/model.py") == ""
    assert ws.changed_paths() == ["train.py"]


def test_new_file_needs_empty_old_str() -> None:
    ws = Workspace(FILES)
    ws.edit("util.py", "", "X = 1\n")
    assert ws.files["util.py"] == "X = 1\n"
    with pytest.raises(WorkspaceError, match="no such file"):
        ws.edit("other.py", "a", "b")


def test_hash_ignores_comments_and_formatting_but_not_code() -> None:
    h = content_hash(FILES)
    commented = dict(FILES, **{"train.py": "# use loss.item() here\n" + FILES["train.py"]})
    assert content_hash(commented) == h
    changed = dict(FILES, **{"train.py": FILES["train.py"].replace("total += x", "total += 2*x")})
    assert content_hash(changed) != h
    assert content_hash(dict(reversed(list(FILES.items())))) == h


def test_syntax_error_checks_the_whole_file() -> None:
    assert syntax_error("a.py", "def f(:\n  pass\n").startswith("a.py:1: SyntaxError")
    assert syntax_error("a.py", "x = 1\n") is None
    assert syntax_error("notes.txt", "def f(:") is None


def test_patch_round_trip_and_strictness() -> None:
    new = dict(FILES, **{"train.py": FILES["train.py"].replace("total += x", "total += x.item()"),
                         "added.py": "A = 1\n"})
    patch = unified_diff(FILES, new)
    assert apply_patch(FILES, patch) == new
    broken = dict(FILES, **{"train.py": "something else\n"})
    with pytest.raises(WorkspaceError, match="does not apply"):
        apply_patch(broken, patch)


def test_absorb_skips_symlinks_and_keeps_binaries_apart(tmp_path: Path) -> None:
    """Binary files a run wrote are kept for the next commands (``blobs``), apart from the
    files: no diff, no content hash, and a verification's copy (``blobs=False``) has none."""
    ws = Workspace(FILES)
    ws.write_to(tmp_path)
    before = ws.content_hash()
    (tmp_path / "out.txt").write_text("ok\n")
    (tmp_path / "ckpt" / "blob.bin").parent.mkdir()
    (tmp_path / "ckpt" / "blob.bin").write_bytes(b"\xff\xfe\x00")
    os.symlink("/etc/passwd", tmp_path / "link.txt")
    (tmp_path / "pkg" / "model.py").unlink()
    changed, notes = ws.absorb(tmp_path)
    assert changed == {"out.txt": "ok\n"} and ws.blobs == {"ckpt/blob.bin": b"\xff\xfe\x00"}
    assert any("symlink" in n for n in notes) and not any("binary" in n for n in notes)
    assert "pkg/model.py" not in ws.files and "link.txt" not in ws.files
    assert "ckpt/blob.bin" in ws.review_diff() and "ckpt/blob.bin" not in ws.diff()
    ws.files.pop("out.txt")
    ws.files["pkg/model.py"] = FILES["pkg/model.py"]
    assert ws.content_hash() == before  # the blob is no part of the workspace's identity
    again = tmp_path / "again"
    ws.write_to(again)
    assert (again / "ckpt" / "blob.bin").read_bytes() == b"\xff\xfe\x00"
    ws.write_to(tmp_path / "verify", blobs=False)
    assert not (tmp_path / "verify" / "ckpt").exists()
    (again / "ckpt" / "blob.bin").unlink()  # a run that removes it: gone
    ws.absorb(again)
    assert ws.blobs == {}
    big = tmp_path / "big"
    ws.write_to(big)
    sizes = {"a.bin": 12_000_000, "b.bin": 12_000_000, "c.bin": 12_000_000, "d.bin": 20_000_000}
    for name, size in sizes.items():
        (big / name).write_bytes(b"\xff" * size)
    _, notes = ws.absorb(big)
    assert set(ws.blobs) == {"a.bin", "b.bin"}  # 16 MB a file, 32 MB in all
    assert any(n.startswith("binary file c.bin") and "not kept" in n for n in notes)
    assert any(n.startswith("skipped d.bin (larger than 16000000 bytes)") for n in notes)


def test_per_file_memos_are_keyed_by_path_and_text_and_bounded() -> None:
    from sandbox_env import workspace as w

    bad = "def f(:\n"
    assert w.syntax_error("a.py", bad).startswith("a.py:1: SyntaxError")
    assert w.syntax_error("b.py", bad).startswith("b.py:1: SyntaxError")  # same text, its own path
    assert w.syntax_error("a.py", "x = 1\n") is None
    assert w.normalised_source("m.py", "x = 1  # c\n") == w.normalised_source("m.py", "x = 1\n")
    assert w.normalised_source("m.py", "x = 2\n") != w.normalised_source("m.py", "x = 1\n")
    memo: w._FileMemo[int] = w._FileMemo(3)
    calls: list[str] = []
    for text in ("1", "2", "1", "3", "4", "1", "2"):
        memo.get("f", text, lambda _p, t: calls.append(t) or len(calls))
    assert calls == ["1", "2", "3", "4", "2"]  # "1" was used again, so "2" was the one evicted
    assert len(memo._items) == 3


def test_first_syntax_error_follows_the_files_in_path_order_and_their_edits() -> None:
    ws = Workspace({"b.py": "x = (\n", "a.py": "y = 1\n", "c.txt": "not python ("})
    assert ws.first_syntax_error() == syntax_error("b.py", "x = (\n")
    ws.files["a.py"] = "def f(:\n"  # a direct change is seen too (the memo keys on the texts)
    assert ws.first_syntax_error() == syntax_error("a.py", "def f(:\n")
    ws.files["a.py"] = "y = 1\n"
    ws.edit("b.py", "x = (", "x = ()")
    assert ws.first_syntax_error() is None


def test_first_syntax_error_is_shared_by_workspaces_in_the_same_state() -> None:
    broken = {"a.py": "def f(:\n", "b.py": "y = 1\n"}
    first = Workspace(dict(broken)).first_syntax_error()
    assert first == syntax_error("a.py", "def f(:\n")
    assert Workspace(dict(broken)).first_syntax_error() == first
    assert Workspace({"a.py": "def f(): pass\n", "b.py": "y = 1\n"}).first_syntax_error() is None


def test_review_diff_shows_code_and_lists_what_runs_wrote() -> None:
    """view_git_diff reads like git diff + git status: the repo's files and the files the agent
    created are diffed; files only runs wrote (exports, logs) are listed by name, not dumped."""
    ws = Workspace({"train.py": "a = 1\n", "data/keep.csv": "x\n"})
    ws.edit("train.py", "a = 1", "a = 2")
    ws.edit("helpers.py", "", "def f():\n    return 1\n")
    run = {**ws.files, "data/keep.csv": "y\n", **{f"data/export/{i}.csv": "1,2,3\n" * 50 for i in range(45)}}
    ws.sync(run)
    out = ws.review_diff()
    assert "+a = 2" in out and "+def f():" in out and "+y" in out  # tracked and created files
    assert "1,2,3" not in out and "Untracked files written by runs (45, not diffed):" in out
    assert "  data/export/0.csv\n" in out and "... and 5 more" in out
    assert "+1,2,3" in ws.review_diff("data/export/0.csv")  # naming one shows it
    assert ws.diff() != out and "+1,2,3" in ws.diff()  # the full diff (the judge's) is unchanged
    assert Workspace({"a.py": "1\n"}).review_diff() == ""
