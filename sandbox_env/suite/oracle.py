"""The oracle's playbook: the reference fix of a task as a sequence of environment actions."""

from __future__ import annotations

import difflib
from typing import Any

from ..workspace import apply_patch
from .tasks import TaskSpec


def patch_to_edits(files: dict[str, str], patch: str) -> list[dict[str, Any]]:
    """edit_file actions that turn ``files`` into ``files`` + ``patch`` (unique old_str each)."""
    new_files = apply_patch(files, patch)
    edits: list[dict[str, Any]] = []
    for path in sorted(set(files) | set(new_files)):
        old, new = files.get(path), new_files.get(path)
        if old == new:
            continue
        if old is None:
            edits.append({"action_type": "edit_file", "filename": path, "old_str": "", "new_str": new})
            continue
        if new is None:
            raise ValueError(f"the patch deletes {path}; edit_file cannot express that")
        a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
        chunks = []
        for group in difflib.SequenceMatcher(None, a, b, autojunk=False).get_grouped_opcodes(2):
            i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
            chunks.append(("".join(a[i1:i2]), "".join(b[j1:j2])))
        if any(not o or old.count(o) != 1 for o, _ in chunks):
            chunks = [(old, new)]
        edits += [{"action_type": "edit_file", "filename": path, "old_str": o, "new_str": n}
                  for o, n in chunks]
    return edits


def oracle_actions(task: TaskSpec) -> list[dict[str, Any]]:
    """Reproduce, read what matters, apply the reference fix, rerun, submit the explanation."""
    actions: list[dict[str, Any]] = [{"action_type": "execute_bash", "command": task.run_command}]
    actions += [{"action_type": "read_file", "filename": f} for f in task.signal_files[:2]]
    actions += patch_to_edits(task.repo_files(), task.solution_patch)
    actions.append({"action_type": "execute_bash", "command": task.run_command})
    actions.append({"action_type": "submit_fix", "explanation": task.reference_explanation})
    return actions
