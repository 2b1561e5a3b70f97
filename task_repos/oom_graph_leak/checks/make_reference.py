"""Regenerate checks/reference.json by running driver.py on repo/ + solution.patch.

Usage: /work/main/.venv/bin/python task_repos/oom_graph_leak/checks/make_reference.py
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
TASK = HERE.parent
sys.path.insert(0, str(HERE))
import knobs  # noqa: E402


def run_once(ws: Path, threads: int) -> tuple[dict, float]:
    import resource
    out = ws.parent / f"ref_{threads}.json"
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads),
               PYTHONHASHSEED="0")
    cap = knobs.DATA_CAP_MB * 1024 * 1024
    p = subprocess.run([sys.executable, str(HERE / "driver.py"), str(ws), str(out),
                        json.dumps(knobs.CONFIG)], env=env, capture_output=True, text=True,
                       preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_DATA, (cap, cap)))
    if p.returncode != 0:
        sys.exit(f"driver failed on the solution:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return json.loads(out.read_text()), peak


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        ws = Path(d) / "ws"
        shutil.copytree(TASK / "repo", ws)
        subprocess.run(["patch", "-p1", "-s", "-i", str(TASK / "solution.patch")], cwd=ws, check=True)
        r1, peak = run_once(ws, 1)
        r2, _ = run_once(ws, 2)
    val1 = [e["val_loss"]["value"] for e in r1["epochs"]]
    val2 = [e["val_loss"]["value"] for e in r2["epochs"]]
    tr1 = [e["train_loss"]["value"] for e in r1["epochs"]]
    tr2 = [e["train_loss"]["value"] for e in r2["epochs"]]
    dv = max(abs(a - b) for a, b in zip(val1, val2))
    dt = max(abs(a - b) for a, b in zip(tr1, tr2))
    print(f"1 vs 2 threads: max val diff {dv:.2e}, max train diff {dt:.2e}; peak RSS {peak:.0f} MB")
    assert dv < knobs.VAL_TOL / 10 and dt < knobs.TRAIN_TOL / 10, "thread-count drift too large"
    ref = {
        "config": knobs.CONFIG,
        "val_losses": val1,
        "train_losses": tr1,
        "rows_eval": r1["rows_eval"],
        "rows_train": r1["rows_train"],
        "fixed_peak_rss_mb": round(peak, 1),
        "fixed_max_live_graphs": max(r1["max_live_graphs_train"], r1["max_live_graphs_eval"]),
    }
    (HERE / "reference.json").write_text(json.dumps(ref, indent=2) + "\n")
    print(json.dumps(ref, indent=2))


if __name__ == "__main__":
    main()
