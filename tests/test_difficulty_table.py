"""tools/difficulty_table.py turns a player's JSONL log into a row and a patch of the final workspace:
the last diff the player viewed when only the submit followed it, else the replayed edits."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TASK = "oom_graph_leak"


def step(t: float, action: dict, obs: dict) -> dict:
    return {"t": t, "dt": 0.5, "method": "POST", "path": "/step", "status": 200,
            "body": {"episode_id": "e1", "action": action}, "reply": {"observation": obs}}


def obs(n: int, **extra) -> dict:
    return {"step_number": n, "max_steps": 16, "done": False, "score": None, "verdict": None, **extra}


def write_log(path: Path, steps: list[dict]) -> None:
    reset = {"t": 0.0, "dt": 1.0, "method": "POST", "path": "/reset", "status": 200,
             "body": {"task": "incident-x"}, "reply": {"observation": obs(0)}}
    done = obs(len(steps) + 1, done=True, score=0.9, verdict={"passed": True})
    submit = step(50.0, {"action_type": "submit_fix", "explanation": "x"}, done)
    path.write_text("\n".join(json.dumps(r) for r in [reset, *steps, submit]) + "\n")


def run_table(tmp: Path, log: Path) -> tuple[str, str, str]:
    key = tmp / "key.json"
    key.write_text(json.dumps({"incident-x": f"{TASK}@0"}))
    out = tmp / "patches"
    p = subprocess.run([sys.executable, "tools/difficulty_table.py", "--key", str(key),
                        "--patches-out", str(out),
                        str(log)], cwd=ROOT, capture_output=True, text=True, check=True)
    return p.stdout, p.stderr, (out / TASK / f"{log.parent.name}_{log.stem}_solved.patch").read_text()


def test_a_diff_viewed_last_is_the_final_workspace(tmp_path: Path) -> None:
    diff = "--- a/train.py\n+++ b/train.py\n@@ -1 +1 @@\n-a\n+b\n"
    log = tmp_path / "p1" / "ep1.jsonl"
    log.parent.mkdir()
    write_log(log, [step(1.0, {"action_type": "execute_bash", "command": "sed -i s/a/b/ train.py"}, obs(1)),
                    step(2.0, {"action_type": "view_git_diff"}, obs(2, terminal_output=diff))])
    table, warn, patch = run_table(tmp_path, log)
    assert f"| {TASK} | 0 | yes | 3 / 16 | 0.900 |" in table
    assert patch == diff and not warn


def test_edits_are_replayed_and_shell_runs_after_them_are_flagged(tmp_path: Path) -> None:
    src = (ROOT / "task_repos" / TASK / "repo" / "train.py").read_text()
    old = src.splitlines()[0]
    log = tmp_path / "p2" / "ep1.jsonl"
    log.parent.mkdir()
    write_log(log, [step(1.0, {"action_type": "edit_file", "filename": "train.py", "old_str": old,
                               "new_str": old + "  # edited"}, obs(1)),
                    step(2.0, {"action_type": "execute_bash", "command": "rm -f scratch.py"}, obs(2))])
    _, warn, patch = run_table(tmp_path, log)
    assert "+" + old + "  # edited" in patch and "-" + old in patch
    assert "shell commands ran after the last edit" in warn
