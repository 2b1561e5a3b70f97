import pathlib as _pathlib; ROOT = str(_pathlib.Path(__file__).resolve().parents[2])  # the repository
import sys, tomllib
from pathlib import Path
sys.path.insert(0, ROOT + "")
from sandbox_env.suite.variants import Family, to_base
from sandbox_env.workspace import apply_patch
FAM = Path(ROOT + "/staging/distributed_sampler_missing_set_epoch/distributed_sampler_missing_set_epoch")
sys.path.insert(0, str(FAM)); import classifier as cls
fam = Family(FAM)
labels = {e["file"]: e["behaviour"] for e in tomllib.load(open(FAM / "patches/labels.toml", "rb"))["patch"]}
for idx in [1, 6, 7, 9]:
    v = fam.generate(idx)

    files, man = v.repo, v.manifest
    base = to_base(files, man, "config:TrainConfig")
    bad = []
    sol = apply_patch(files, v.solution_patch); sb = to_base(sol, man, "config:TrainConfig")
    if cls.classify(sb) != "fixed": bad.append(("solution", cls.classify(sb)))
    if base is None: print(idx, "to_base None"); continue
    if cls.classify(base) != "bug": bad.append(("orig", cls.classify(base)))
    for name, text in (v.patches or {}).items():
        try:
            pf = apply_patch(files, text)
        except Exception as e:
            bad.append((name, "apply " + str(e)[:60])); continue
        b = to_base(pf, man, "config:TrainConfig")
        want = labels.get(name, "fixed")
        got = cls.classify(b) if b is not None else "to_base None"
        if got != want: bad.append((name, want, got))
    print(idx, "mismatches:", bad)
