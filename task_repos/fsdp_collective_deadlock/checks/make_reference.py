"""Regenerate checks/reference.json by running the driver on repo/ + solution.patch.

    .venv/bin/python task_repos/fsdp_collective_deadlock/checks/make_reference.py

Uses check_runtime's child environment (OMP_NUM_THREADS=1, GLOO_SOCKET_IFNAME=lo), the same
knobs as check.py, and runs the driver twice to confirm the values are reproducible.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CHECKS = Path(__file__).resolve().parent
TASK = CHECKS.parent
ROOT = TASK.parent.parent
sys.path.insert(0, str(CHECKS))
sys.path.insert(0, str(ROOT / "sandbox_env"))

import knobs  # noqa: E402
from check_runtime import Check  # noqa: E402


def run_once(ws: Path, scratch: Path) -> dict:
    ck = Check(ws, CHECKS, scratch)
    out = scratch / "result.json"
    res = ck.run_driver(
        "driver.py",
        "--workspace", str(ws),
        "--out", str(out),
        "--overrides", json.dumps(knobs.TRAIN_OVERRIDES),
        "--world-size", str(knobs.WORLD_SIZE),
        "--pg-timeout", str(knobs.PG_TIMEOUT_S),
        timeout_s=knobs.DRIVER_WALL_S,
    )
    if not res.ok:
        raise SystemExit(f"driver failed on the reference fix:\n{res.output[-3000:]}")
    ranks = json.loads(out.read_text())["ranks"]
    assert ranks["0"]["params"] == ranks["1"]["params"], "ranks disagree on the reference fix"
    return {"history": ranks["0"]["history"], "params": ranks["0"]["params"],
            "duration_s": res.duration_s}


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        ws = Path(d) / "ws"
        shutil.copytree(TASK / "repo", ws)
        subprocess.run(["patch", "-p1", "-s", "-i", str(TASK / "solution.patch")], cwd=ws,
                       check=True)
        runs = []
        for i in range(2):
            scratch = Path(d) / f"scratch{i}"
            scratch.mkdir()
            runs.append(run_once(ws, scratch))
            print(f"run {i}: {runs[-1]['duration_s']:.1f}s", runs[-1]["history"])
        a, b = runs
        assert a["history"] == b["history"] and a["params"] == b["params"], "not reproducible"
    ref = {
        "knobs": dict(knobs.TRAIN_OVERRIDES, world_size=knobs.WORLD_SIZE),
        "torch": subprocess.run([sys.executable, "-c", "import torch; print(torch.__version__)"],
                                capture_output=True, text=True).stdout.strip(),
        "history": a["history"],
        "params": a["params"],
    }
    (CHECKS / "reference.json").write_text(json.dumps(ref, indent=1) + "\n")
    print("wrote", CHECKS / "reference.json")


if __name__ == "__main__":
    main()
