"""Float noise of correct fixes vs the reference, and the distance of wrong fixes, under knob draws
of task.toml (host torch, no kit): fit() of each state from a patched copy, compared with the
solution's: max |result diff| and max |parameter diff|.

    python staging/masked_deviance_nan_grad/tools/margins.py DRAWS STATE...   (STATE: a patch file name)
"""

import json
import random
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

F = Path(__file__).resolve().parents[1] / "masked_deviance_nan_grad"
RUN = r"""
import json, sys, torch
from dataclasses import replace
sys.path.insert(0, ".")
import train
from countcast.config.job import JobConfig
knobs = json.loads(sys.argv[1])
try:
    out = train.fit(replace(JobConfig(), **knobs))
except Exception as exc:
    torch.save({"error": repr(exc)[:200]}, sys.argv[2]); raise SystemExit(0)
flat = [out["holdout_deviance"]] + [v for m in out["members"] for v in [m["holdout_deviance"], *m["monitor"]]]
torch.save({"flat": flat, "state": {k: v.clone() for k, v in out["models"].state_dict().items()}}, sys.argv[2])
"""


def run(patch: Path | None, knobs: dict, out: Path) -> dict:
    with tempfile.TemporaryDirectory() as td:
        ws = Path(td) / "r"
        shutil.copytree(F / "repo", ws, ignore=shutil.ignore_patterns("__pycache__"))
        if patch is not None:
            subprocess.run(["patch", "-p1", "-s", "-i", str(patch)], cwd=ws, check=True)
        subprocess.run([sys.executable, "-c", RUN, json.dumps(knobs), str(out)], cwd=ws, check=True)
    import torch
    return torch.load(out)


def main() -> None:
    import torch
    draws, states = int(sys.argv[1]), sys.argv[2:]
    knobs_table = tomllib.loads((F / "task.toml").read_text())["verify"]["knobs"]
    rng = random.Random(7)
    for d in range(draws):
        knobs = {k: rng.choice(v) for k, v in knobs_table.items()}
        with tempfile.TemporaryDirectory() as td:
            ref = run(F / "solution.patch", knobs, Path(td) / "ref.pt")
            for s in states:
                got = run(F / "patches" / s, knobs, Path(td) / "got.pt")
                if "error" in got:
                    print(f"draw {d} {s}: {got['error']}", flush=True)
                    continue
                if len(got["flat"]) != len(ref["flat"]):
                    print(f"draw {d} {s}: {len(got['flat'])} results vs {len(ref['flat'])}", flush=True)
                    continue
                res = max(abs(a - b) for a, b in zip(got["flat"], ref["flat"]))
                par = max(float((got["state"][k] - v).abs().max()) for k, v in ref["state"].items())
                print(f"draw {d} {s}: max |result diff| {res:.3g}, max |param diff| {par:.3g}", flush=True)


if __name__ == "__main__":
    main()
