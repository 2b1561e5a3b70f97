"""fit() of labelled states vs the solution under knob draws, host torch, no kit: the largest result
and parameter differences (how far correct idioms sit from the reference, wrong ones from it).

    python staging/sparse_export_missing_zero_days/tools/margins.py [DRAWS] [PATCH ...]
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

FAMILY = Path(__file__).resolve().parents[1] / "sparse_export_missing_zero_days"
PY = sys.executable
RUN = r'''
import dataclasses, json, sys, torch
sys.path.insert(0, ".")
import config, train
cfg = dataclasses.replace(config.Config(), **json.loads(sys.argv[1]))
out = train.fit(cfg)
model = out.pop("model")
def flat(v, p=""):
    if isinstance(v, dict):
        for k, x in v.items():
            yield from flat(x, f"{p}.{k}" if p else str(k))
    elif isinstance(v, (list, tuple)):
        for k, x in enumerate(v):
            yield from flat(x, f"{p}.{k}")
    else:
        yield p, float(v)
print("RESULT", json.dumps({"r": dict(flat(out)), "p": {k: t.flatten().tolist() for k, t in model.state_dict().items()}}))
'''


def state(patch: Path | None, knobs: dict, root: Path) -> dict:
    ws = root / (patch.stem if patch else "solution")
    if not ws.exists():
        subprocess.run(["cp", "-r", str(FAMILY / "repo"), str(ws)], check=True)
        for p in [FAMILY / "solution.patch"] if patch is None else [patch]:
            subprocess.run(["patch", "-p1", "-s", "-i", str(p)], cwd=ws, check=True)
    out = subprocess.run([PY, "-c", RUN, json.dumps(knobs)], cwd=ws, capture_output=True, text=True)
    line = next((x for x in out.stdout.splitlines() if x.startswith("RESULT ")), None)
    if line is None:
        return {"error": out.stderr.strip().splitlines()[-1:] }
    return json.loads(line[7:])


def diff(a: dict, b: dict) -> tuple[float, float]:
    if "error" in a or "error" in b:
        return float("nan"), float("nan")
    r = max((abs(a["r"][k] - b["r"].get(k, float("inf"))) for k in a["r"]), default=0.0)
    if set(a["p"]) != set(b["p"]) or any(len(a["p"][k]) != len(b["p"][k]) for k in a["p"]):
        return r, float("inf")
    p = max(max(abs(x - y) for x, y in zip(a["p"][k], b["p"][k])) for k in a["p"])
    return r, p


if __name__ == "__main__":
    draws = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    verify = tomllib.loads((FAMILY / "task.toml").read_text())["verify"]["knobs"]
    names = sys.argv[2:] or [p["file"] for p in tomllib.loads((FAMILY / "patches/labels.toml").read_text())["patch"]]
    rng = random.Random(7)
    with tempfile.TemporaryDirectory(prefix="sparse_export_missing_zero_days-margins-", dir="/tmp") as td:
        for _ in range(draws):
            knobs = {k: rng.choice(v) for k, v in verify.items()}
            ref = state(None, knobs, Path(td))
            print("knobs", knobs, flush=True)
            for name in names:
                r, p = diff(state(FAMILY / "patches" / name, knobs, Path(td)), ref)
                print(f"  {name:45s} result {r:.3g}  param {p:.3g}", flush=True)
