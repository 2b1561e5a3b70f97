"""Every labelled state of variants 1-9 (original, solution, labelled patches), mapped back with
variants.to_base, must get its label from the classifier.

    python staging/masked_deviance_nan_grad/tools/variant_labels.py
"""

import importlib.util
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
from sandbox_env.suite.variants import Family, to_base  # noqa: E402

F = Path(__file__).resolve().parents[1] / "masked_deviance_nan_grad"
spec = importlib.util.spec_from_file_location("cls", F / "classifier.py")
cls = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cls)


def applied(files: dict[str, str], patch: str) -> dict[str, str]:
    with tempfile.TemporaryDirectory() as d:
        ws = Path(d)
        for k, t in files.items():
            (ws / k).parent.mkdir(parents=True, exist_ok=True)
            (ws / k).write_text(t)
        subprocess.run(["patch", "-p1", "-s"], cwd=ws, input=patch, text=True, check=True)
        return {str(p.relative_to(ws)): p.read_text() for p in ws.rglob("*") if p.is_file() and not p.name.endswith(".orig")}


labels = {p["file"]: p["behaviour"] for p in tomllib.loads((F / "patches/labels.toml").read_text())["patch"]}
fam, bad, seen = Family(F), 0, 0
for n in range(1, 10):
    v = fam.generate(n)
    ref = v.task_toml["entry"]["config"]
    states = [("original", v.repo, "bug"), ("solution", applied(v.repo, v.solution_patch), "fixed")]
    states += [(f, applied(v.repo, t), labels[f]) for f, t in v.patches.items()]
    renamed = len(v.manifest.renames)
    for name, files, want in states:
        base = to_base(files, v.manifest, ref)
        got = cls.classify(base) if base is not None else "to_base: None"
        seen += 1
        if got != want:
            bad += 1
            print(f"@{n} {name}: want {want} got {got}")
    print(f"@{n}: {len(states)} states, {renamed} names renamed, dropped {v.manifest.patches_dropped}", flush=True)
print(f"{seen} states, {bad} mismatches")
