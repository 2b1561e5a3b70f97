import sys, subprocess, shutil, tempfile, tomllib
from pathlib import Path
FAM = Path(__file__).resolve().parents[1] / "missing_eval_mode_bn_stats_drift"
sys.path.insert(0, str(FAM)); sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[3]))
import classifier
def files_of(patch):
    with tempfile.TemporaryDirectory() as d:
        ws = Path(d) / "ws"; shutil.copytree(FAM / "repo", ws)
        if patch: subprocess.run(["patch", "-p1", "-s", "-i", str(patch)], cwd=ws, check=True)
        return {str(p.relative_to(ws)): p.read_text() for p in ws.rglob("*") if p.is_file()}
print("original", classifier.classify(files_of(None)))
print("solution", classifier.classify(files_of(FAM / "solution.patch")))
bad = 0
for item in tomllib.loads((FAM / "patches/labels.toml").read_text())["patch"]:
    got = classifier.classify(files_of(FAM / "patches" / item["file"]))
    ok = got == item["behaviour"]; bad += not ok
    print(f"{'OK ' if ok else 'BAD'} {item['file']}: {got} (want {item['behaviour']})")
print("mismatches", bad)
