"""Regenerate reference.json by running the driver on repo/ + solution.patch.

Usage: python checks/make_reference.py   (from the task folder or anywhere)
Runs the driver with OMP_NUM_THREADS=1, like the check does.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
TASK = HERE.parent
sys.path.insert(0, str(HERE))
from knobs import AUX_PREFIX, KNOBS  # noqa: E402


def values(t: torch.Tensor) -> dict:
    return {"shape": list(t.shape), "values": [float(f"{v:.8g}") for v in t.flatten().tolist()]}


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        ws = Path(d) / "ws"
        out = Path(d) / "out"
        out.mkdir()
        shutil.copytree(TASK / "repo", ws)
        subprocess.run(["patch", "-p1", "-s", "-i", str(TASK / "solution.patch")], cwd=ws, check=True)
        env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo",
                   PYTHONHASHSEED="0")
        subprocess.run([sys.executable, str(HERE / "driver.py"), "--workspace", str(ws), "--out", str(out),
                        "--knobs", json.dumps(KNOBS)], env=env, check=True, timeout=300)
        ranks = [json.loads((out / f"rank{r}.json").read_text()) for r in range(KNOBS["world_size"])]
        states = [torch.load(out / f"rank{r}.pt", weights_only=True) for r in range(KNOBS["world_size"])]
        inits = [torch.load(out / f"rank{r}_init.pt", weights_only=True) for r in range(KNOBS["world_size"])]
    for s in states[1:]:
        assert all(torch.equal(s[k], states[0][k]) for k in s), "replicas differ in the reference run"
    losses = [r["losses"] for r in ranks]
    ref = {
        "knobs": KNOBS,
        "losses": losses,
        "final_loss": sum(l[-1] for l in losses) / len(losses),
        "params": {k: values(v) for k, v in states[0].items()},
        "aux_params": sorted(k for k in states[0] if k.startswith(AUX_PREFIX)),
    }
    (HERE / "reference.json").write_text(json.dumps(ref, indent=1) + "\n")
    print(f"final loss {ref['final_loss']:.6f}; aux params {ref['aux_params']}")


if __name__ == "__main__":
    main()
