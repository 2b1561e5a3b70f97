"""Regenerate checks/reference.json from the reference fix (solution.patch).

Usage: python checks/make_reference.py      (run with the project's torch 2.13.0 venv)

1. copies repo/ to a temporary workspace and applies solution.patch;
2. runs driver.py on it (OMP_NUM_THREADS=1, like the check) and keeps its measurements;
3. measures, with forward hooks on the solution's blocks, which side of the activation
   limit every probe batch and every training step takes, and refuses to write a
   reference unless both sides are exercised (otherwise deleting the branch could pass).
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

COVERAGE = r'''
import json, sys
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, sys.argv[2])
import torch
import drive
import config as config_mod, model as model_mod, train as train_mod

hits = {"probe": [], "train": []}
phase = ["probe"]
def hook(module, inputs, out):
    peak = out.detach().abs().amax()
    hits[phase[0]].append(bool(peak > drive.MODEL_KNOBS["max_update"]))

cfg = config_mod.Config(**drive.MODEL_KNOBS)
model = drive.fresh_model(model_mod, cfg)
for block in model.blocks:
    block.fc2.register_forward_hook(hook)
per_batch = []
for x, _ in drive.probe_batches():
    before = len(hits["probe"])
    model(x)
    per_batch.append(hits["probe"][before:])

phase[0] = "train"
orig_build = model_mod.build_model
def build(c):
    m = orig_build(c)
    for block in m.blocks:
        block.fc2.register_forward_hook(hook)
    return m
train_mod.build_model = build
knobs = dict(drive.TRAIN_KNOBS, compile=False)
train_mod.train(config_mod.Config(**drive.MODEL_KNOBS, **knobs))
json.dump({"probe_per_batch": per_batch,
           "train_rescaled": sum(hits["train"]), "train_kept": len(hits["train"]) - sum(hits["train"])},
          sys.stdout)
'''


def main() -> None:
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONHASHSEED="0",
               PYTHONDONTWRITEBYTECODE="1")
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        shutil.copytree(TASK / "repo", ws)
        subprocess.run(["patch", "-p1", "-s", "-i", str(TASK / "solution.patch")], cwd=ws, check=True)
        out = Path(tmp) / "drive.json"
        subprocess.run([sys.executable, str(HERE / "driver.py"), str(ws), str(out)],
                       env=env, check=True)
        res = json.loads(out.read_text())
        cov = json.loads(subprocess.run([sys.executable, "-c", COVERAGE, str(ws), str(HERE)],
                                        env=env, check=True, capture_output=True, text=True,
                                        cwd=ws).stdout)

    assert not res["errors"], res["errors"]
    assert res["explain"]["graph_count"] == 1 and res["explain"]["graph_break_count"] == 0
    flat = [h for batch in cov["probe_per_batch"] for h in batch]
    assert any(flat) and not all(flat), f"probe batches do not cover both sides: {cov}"
    assert not any(cov["probe_per_batch"][0]) and all(cov["probe_per_batch"][-1]), cov
    assert cov["train_rescaled"] >= 5 and cov["train_kept"] >= 5, f"training coverage: {cov}"
    ref = {
        "explain": res["explain"],
        "eager": res["eager"],
        "compiled": res["compiled"],
        "train": res["train"],
        "train_backend": res["train_backend"],
        "coverage": cov,
    }
    diff = max(abs(a - b) for la, lb in zip(res["eager"]["logits"], res["compiled"]["logits"])
               for a, b in zip(la, lb))
    print(f"eager vs compiled max |diff| on the solution: {diff:.3g}")
    print(f"coverage: {json.dumps(cov)}")
    print(f"train losses: {res['train']['losses'][:3]} ... {res['train']['losses'][-1]}")
    (HERE / "reference.json").write_text(json.dumps(ref, indent=1, sort_keys=True) + "\n")
    print("wrote", HERE / "reference.json")


if __name__ == "__main__":
    main()
