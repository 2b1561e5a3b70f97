import sys, tomllib, subprocess, tempfile, shutil, importlib.util
from pathlib import Path
F = Path(__file__).resolve().parents[1] / "compile_recompile_storm"
spec = importlib.util.spec_from_file_location("cls", F / "classifier.py"); cls = importlib.util.module_from_spec(spec); spec.loader.exec_module(cls)
def files_of(patch_text=None, patch_path=None):
    with tempfile.TemporaryDirectory() as d:
        ws = Path(d) / "ws"; shutil.copytree(F / "repo", ws)
        if patch_path or patch_text:
            subprocess.run(["patch", "-p1", "-s"] + (["-i", str(patch_path)] if patch_path else []), cwd=ws, check=True,
                           input=patch_text, text=True)
        return {str(p.relative_to(ws)): p.read_text() for p in ws.rglob("*") if p.is_file() and p.suffix in (".py", ".md")}
bad = 0
states = [("original", None, "bug"), ("solution", F / "solution.patch", "fixed")]
for item in tomllib.loads((F / "patches/labels.toml").read_text())["patch"]:
    states.append((item["file"], F / "patches" / item["file"], item["behaviour"]))
for name, p, want in states:
    got = cls.classify(files_of(patch_path=p))
    bad += got != want
    print(f"{'OK ' if got == want else 'BAD'} {name}: want {want} got {got}")
cases = F / "classifier_cases.toml"
if cases.exists():
    for c in tomllib.loads(cases.read_text())["case"]:
        got = cls.classify(files_of(patch_text=c["patch"]))
        bad += got != c["label"]
        print(f"{'OK ' if got == c['label'] else 'BAD'} case {c['name']}: want {c['label']} got {got}")
print("bad", bad)
