import pathlib as _pathlib; ROOT = str(_pathlib.Path(__file__).resolve().parents[3])  # the repository
import sys, os, subprocess, tempfile, shutil, tomllib
sys.path.insert(0, ROOT + "")
R = ROOT + "/staging/ddp_uneven_inputs_hang/ddp_uneven_inputs_hang"
import importlib.util
spec = importlib.util.spec_from_file_location("cls", R + "/classifier.py"); cls = importlib.util.module_from_spec(spec); spec.loader.exec_module(cls)
def files_of(patch_text=None, patch_path=None):
    d = tempfile.mkdtemp(); ws = os.path.join(d, "ws"); shutil.copytree(R + "/repo", ws)
    if patch_path or patch_text:
        subprocess.run(["patch", "-p1", "-s"] + (["-i", patch_path] if patch_path else []), cwd=ws, input=patch_text, text=True, check=True)
    out = {}
    for root, _, fs in os.walk(ws):
        for f in fs:
            p = os.path.join(root, f); out[os.path.relpath(p, ws)] = open(p).read()
    shutil.rmtree(d); return out
states = [("original", None, "bug"), ("solution", R + "/solution.patch", "fixed")]
for p in tomllib.load(open(R + "/patches/labels.toml", "rb"))["patch"]:
    states.append((p["file"], R + "/patches/" + p["file"], p["behaviour"]))
bad = 0
for name, path, want in states:
    got = cls.classify(files_of(patch_path=path))
    bad += got != want
    print(f"{'OK ' if got == want else 'BAD'} {name}: want {want} got {got}")
if os.path.exists(R + "/classifier_cases.toml"):
    cases = tomllib.load(open(R + "/classifier_cases.toml", "rb"))["case"]
    for c in cases:
        got = cls.classify(files_of(patch_text=c["patch"]))
        bad += got != c["label"]
        print(f"{'OK ' if got == c['label'] else 'BAD'} case {c['name']}: want {c['label']} got {got}")
print("bad", bad)
