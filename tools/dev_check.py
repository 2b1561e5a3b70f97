"""Developer helper: apply a patch to a task repo copy, run it and/or its hidden check on host torch.

Usage:
  python tools/dev_check.py task_repos/oom_graph_leak                 # check the original repo
  python tools/dev_check.py task_repos/oom_graph_leak --solution      # check solution.patch
  python tools/dev_check.py task_repos/oom_graph_leak --patch patches/x.patch --run
  python tools/dev_check.py task_repos/oom_graph_leak --all           # every labelled patch

Runs outside any container: for authoring tasks only.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from sandbox_env.kit.verdict_protocol import parse_verdict  # noqa: E402
from sandbox_env.sandbox.verification import CheckInputs  # noqa: E402
from sandbox_env.suite.tasks import load_task  # noqa: E402


def prepare(task: Path, patch: Path | None, dst: Path) -> None:
    shutil.copytree(task / "repo", dst)
    if patch is not None:
        subprocess.run(["patch", "-p1", "-s", "-i", str(patch.resolve())], cwd=dst, check=True)


def verify(task: Path, ws: Path) -> tuple[dict | None, str, float]:
    with tempfile.TemporaryDirectory() as cd:
        cdir = Path(cd) / "checks"
        CheckInputs(load_task(task.resolve())).write(cdir)
        (Path(cd) / "prod").mkdir()
        env = {**os.environ, "SANDBOX_PRODUCTION_ROOT": str(Path(cd) / "prod")}
        nonce = secrets.token_hex(8)
        t = time.monotonic()
        p = subprocess.run([sys.executable, str(cdir / "check.py"), "--workspace", str(ws)], env=env,
                           input=nonce + "\n", check=False, capture_output=True, text=True, timeout=900)
        return parse_verdict(p.stdout, nonce), p.stdout + p.stderr, time.monotonic() - t


def run_cmd(task: Path, ws: Path) -> None:
    spec = tomllib.loads((task / "task.toml").read_text())
    t = time.monotonic()
    # `python` in the run command is this interpreter (the venv with torch), not the one on PATH
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    p = subprocess.run(spec["run_command"], shell=True, check=False, cwd=ws, capture_output=True, text=True,
                       env=env, timeout=spec.get("limits", {}).get("timeout_s", 120) + 30)
    print(f"--- run: {spec['run_command']} rc={p.returncode} {time.monotonic() - t:.1f}s")
    print((p.stdout + p.stderr)[-4000:])


def one(task: Path, patch: Path | None, do_run: bool, do_verify: bool) -> dict | None:
    with tempfile.TemporaryDirectory() as d:
        ws = Path(d) / "ws"
        prepare(task, patch, ws)
        if do_run:
            run_cmd(task, ws)
        if do_verify:
            v, raw, dt = verify(task, ws)
            if v is None:
                print(raw[-4000:])
            print(f"--- verdict ({dt:.1f}s):", json.dumps(v, indent=1)[:3000])
            return v
    return None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("task", type=Path)
    ap.add_argument("--patch", type=Path)
    ap.add_argument("--solution", action="store_true")
    ap.add_argument("--run", action="store_true", help="also run the task's run_command")
    ap.add_argument("--no-verify", action="store_true")
    ap.add_argument("--all", action="store_true", help="verify every patch in patches/labels.toml")
    a = ap.parse_args()
    task = a.task.resolve()
    if a.all:
        labels = tomllib.loads((task / "patches" / "labels.toml").read_text())["patch"]
        bad = 0
        for item in labels:
            print(f"=== {item['file']} ({item['label']})")
            v = one(task, task / "patches" / item["file"], False, True)
            want = item["label"] == "correct"
            got = bool(v and v["passed"])
            ok = got == want
            bad += not ok
            print(f"=== {item['file']}: expected passed={want} got passed={got} {'OK' if ok else 'MISMATCH'}")
        sys.exit(1 if bad else 0)
    patch = a.patch
    if a.solution:
        patch = task / "solution.patch"
    elif patch is not None and not patch.exists():
        patch = task / patch
    one(task, patch, a.run, not a.no_verify)


if __name__ == "__main__":
    main()
