import pathlib as _pathlib; ROOT = str(_pathlib.Path(__file__).resolve().parents[2])  # the repository
import sys, tomllib
from pathlib import Path
sys.path.insert(0, ROOT + "")
FAM = Path(ROOT + "/staging/distributed_sampler_missing_set_epoch/distributed_sampler_missing_set_epoch")
sys.path.insert(0, str(FAM))
import importlib; cls = importlib.import_module("classifier")
def files(d):
    return {str(p.relative_to(d)): p.read_text() for p in Path(d).rglob("*") if p.is_file() and "runs" not in p.parts and "__pycache__" not in p.parts}
ok = 0; rows = []
rows.append(("original", "bug", cls.classify(files("/tmp/dsse_orig"))))
rows.append(("solution", "fixed", cls.classify(files("/tmp/dsse_sol"))))
for e in tomllib.load(open(FAM / "patches/labels.toml", "rb"))["patch"]:
    n = e["file"][:-6]
    rows.append((n, e["behaviour"], cls.classify(files(f"/tmp/dsse_p/{n}"))))
for r in rows:
    print(("OK " if r[1] == r[2] else "XX ") + f"{r[0]:40s} want {r[1]:20s} got {r[2]}")
print(sum(r[1] == r[2] for r in rows), "/", len(rows))
