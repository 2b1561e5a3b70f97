"""Author's helper: the classifier's label for the original, the solution and every labelled patch."""
import pathlib as _pathlib; ROOT = str(_pathlib.Path(__file__).resolve().parents[3])  # the repository
import shutil, subprocess, sys, tempfile, tomllib
from pathlib import Path
sys.path.insert(0, ROOT + "")
FAM = Path(__file__).resolve().parent.parent / "rank0_eval_through_ddp_wrapper_hang"
import importlib.util
spec = importlib.util.spec_from_file_location("clf", FAM / "classifier.py")
clf = importlib.util.module_from_spec(spec); spec.loader.exec_module(clf)


def files_of(patch):
    with tempfile.TemporaryDirectory() as d:
        ws = Path(d) / "ws"
        shutil.copytree(FAM / "repo", ws)
        if patch:
            subprocess.run(["patch", "-p1", "-s", "-i", str(patch)], cwd=ws, check=True)
        return {str(p.relative_to(ws)): p.read_text() for p in ws.rglob("*") if p.is_file() and p.suffix in (".py", ".md")}


states = [("original", None, "bug"), ("solution", FAM / "solution.patch", "fixed")]
for item in tomllib.loads((FAM / "patches/labels.toml").read_text())["patch"]:
    states.append((item["file"], FAM / "patches" / item["file"], item["behaviour"]))
bad = 0
for name, p, want in states:
    got = clf.classify(files_of(p))
    bad += got != want
    print(f"{'OK ' if got == want else 'BAD'} {name}: want {want} got {got}")
print("mismatches:", bad)
