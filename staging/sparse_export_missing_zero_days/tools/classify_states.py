"""The classifier on every labelled state (original, solution, patches/) and, with --variants, on every
labelled state of variants 1-9 mapped back with variants.to_base.

    python staging/sparse_export_missing_zero_days/tools/classify_states.py [--variants]
"""

import importlib.util
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
F = Path(__file__).resolve().parents[1] / "sparse_export_missing_zero_days"
spec = importlib.util.spec_from_file_location("cls", F / "classifier.py")
cls = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cls)


def read(root: Path) -> dict[str, str]:
    out = {}
    for p in root.rglob("*"):
        if p.is_file() and "__pycache__" not in p.parts and not p.name.endswith(".orig"):
            try:
                out[str(p.relative_to(root))] = p.read_text()
            except UnicodeDecodeError:
                pass
    return out


def applied(files: dict[str, str], patch: str) -> dict[str, str]:
    with tempfile.TemporaryDirectory() as d:
        ws = Path(d)
        for k, t in files.items():
            (ws / k).parent.mkdir(parents=True, exist_ok=True)
            (ws / k).write_text(t)
        subprocess.run(["patch", "-p1", "-s"], cwd=ws, input=patch, text=True, check=True)
        return read(ws)


labels = {p["file"]: p["behaviour"] for p in tomllib.loads((F / "patches/labels.toml").read_text())["patch"]}
bad = seen = 0
if "--variants" not in sys.argv:
    repo = read(F / "repo")
    states = [("original", repo, "bug"), ("solution", applied(repo, (F / "solution.patch").read_text()), "fixed")]
    states += [(f, applied(repo, (F / "patches" / f).read_text()), want) for f, want in labels.items()]
    cases = tomllib.loads((F / "classifier_cases.toml").read_text()).get("case", []) if (F / "classifier_cases.toml").exists() else []
    states += [(f"case {c['name']}", applied(repo, c["patch"]), c["label"]) for c in cases]
    for name, files, want in states:
        got = cls.classify(files)
        seen += 1
        bad += got != want
        print(f"{'ok ' if got == want else 'BAD'} {name}: want {want} got {got}")
else:
    from sandbox_env.suite.variants import Family, to_base
    fam = Family(F)
    for n in range(1, 10):
        v = fam.generate(n)
        ref = v.task_toml["entry"]["config"]
        states = [("original", v.repo, "bug"), ("solution", applied(v.repo, v.solution_patch), "fixed")]
        states += [(f, applied(v.repo, t), labels[f]) for f, t in v.patches.items()]
        for name, files, want in states:
            base = to_base(files, v.manifest, ref)
            got = cls.classify(base) if base is not None else "to_base: None"
            seen += 1
            if got != want:
                bad += 1
                print(f"@{n} {name}: want {want} got {got}")
        print(f"@{n}: {len(states)} states, {len(v.manifest.renames)} renames, dropped {v.manifest.patches_dropped}", flush=True)
print(f"{seen} states, {bad} mismatches")
