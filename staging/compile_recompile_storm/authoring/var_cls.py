import importlib.util, subprocess, tempfile, shutil
from pathlib import Path
from sandbox_env.suite.variants import Family, to_base
F = Path(__file__).resolve().parents[1] / "compile_recompile_storm"
spec = importlib.util.spec_from_file_location("cls", F / "classifier.py"); cls = importlib.util.module_from_spec(spec); spec.loader.exec_module(cls)
fam = Family(F)
def apply(files, patch):
    with tempfile.TemporaryDirectory() as d:
        ws = Path(d)
        for k, t in files.items():
            (ws / k).parent.mkdir(parents=True, exist_ok=True); (ws / k).write_text(t)
        subprocess.run(["patch", "-p1", "-s"], cwd=ws, input=patch, text=True, check=True)
        return {str(p.relative_to(ws)): p.read_text() for p in ws.rglob("*") if p.is_file() and not p.name.endswith(".orig")}
import tomllib
labels = {p["file"]: p["behaviour"] for p in tomllib.loads((F / "patches/labels.toml").read_text())["patch"]}
bad = 0
for n in range(1, 10):
    v = fam.generate(n)
    cfgref = v.task_toml["entry"]["config"]
    states = [("original", v.repo, "bug"), ("solution", apply(v.repo, v.solution_patch), "fixed")]
    states += [(f, apply(v.repo, t), labels[f]) for f, t in v.patches.items()]
    for name, files, want in states:
        base = to_base(files, v.manifest, cfgref)
        got = cls.classify(base) if base is not None else "to_base None"
        if got != want:
            bad += 1; print(n, name, want, got)
print("bad", bad)
