import pathlib as _pathlib; ROOT = str(_pathlib.Path(__file__).resolve().parents[2])  # the repository
import sys, tomllib, subprocess, tempfile, shutil
from pathlib import Path
sys.path.insert(0, ROOT + "")
FAM = Path(ROOT + "/staging/distributed_sampler_missing_set_epoch/distributed_sampler_missing_set_epoch")
sys.path.insert(0, str(FAM))
import classifier as cls
data = tomllib.load(open(FAM / "classifier_cases.toml", "rb"))
good = 0
for c in data["case"]:
    d = Path(tempfile.mkdtemp()) / "w"
    shutil.copytree(FAM / "repo", d)
    subprocess.run(["patch", "-p1", "-s"], input=c["patch"], text=True, cwd=d, check=True)
    files = {str(p.relative_to(d)): p.read_text() for p in d.rglob("*") if p.is_file()}
    got = cls.classify(files)
    good += got == c["label"]
    print("OK" if got == c["label"] else "XX", c["name"], c["label"], got)
print(good, "/", len(data["case"]))
