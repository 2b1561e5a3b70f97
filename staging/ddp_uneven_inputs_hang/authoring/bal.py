import pathlib as _pathlib; ROOT = str(_pathlib.Path(__file__).resolve().parents[3])  # the repository
import sys, math
sys.path.insert(0, ROOT + "/staging/ddp_uneven_inputs_hang/ddp_uneven_inputs_hang/repo")
from dataclasses import replace
import torch
from config import TrainConfig
from shards import make_shards
def counts(cfg, W):
    sh = make_shards(cfg, "train")
    return [math.ceil(sum(len(s) for s in sh[r::W]) / cfg.batch_size) for r in range(W)]
base = TrainConfig()
for n in (10, 11, 12, 9, 8, 14):
    print("defaults n_shards", n, counts(replace(base, n_shards=n), 2))
good = []
for ds in range(1, 400):
    ok = True
    for n in (8, 10, 12):
        for bs in (16, 24, 32):
            for W in (3, 4):
                c = counts(replace(base, data_seed=ds, n_shards=n, batch_size=bs), W)
                if c[0] == max(c) or len(set(c)) < 3: ok = False
    if ok: good.append(ds)
print(len(good), good[:40])
eq = [ds for ds in range(1, 3000) if len(set(counts(replace(base, data_seed=ds), 2))) == 1]
print("balanced at W=2 defaults:", eq[:10])
