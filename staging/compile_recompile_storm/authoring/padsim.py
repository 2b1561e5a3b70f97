import itertools, sys
sys.path.insert(0, ".")
from dataclasses import replace
from config import TrainConfig
from data import make_splits
from sampler import LengthGroupedBatchSampler
def ratio_all(cfg):
    tr, _ = make_splits(cfg)
    L = tr.lengths()
    out = {"ref": 0, "max": 0, 8: 0, 16: 0, 32: 0}
    for ep in (1, 2):
        s = LengthGroupedBatchSampler(L, cfg.batch_size, cfg.group_size, cfg.seed); s.set_epoch(ep)
        for b in s:
            m = max(L[i] for i in b); n = len(b)
            out["ref"] += n * m; out["max"] += n * cfg.max_len
            for k in (8, 16, 32): out[k] += n * (-(-m // k) * k)
    return {k: v / out["ref"] for k, v in out.items() if k != "ref"}
gs = [int(x) for x in sys.argv[1].split(",")]
res = {k: [] for k in ("max", 8, 16, 32)}
for seed, ds, nt, bs, mn, mx, g in itertools.product([3, 777], [5, 5150], [320, 448], [24, 32], [4, 5, 8], [48, 56, 72, 80], gs):
    cfg = replace(TrainConfig(), seed=seed, data_seed=ds, n_train=nt, batch_size=bs, min_len=mn, max_len=mx, group_size=g)
    r = ratio_all(cfg)
    for k in res: res[k].append(r[k])
for k, v in res.items(): print(k, "min %.3f max %.3f" % (min(v), max(v)))
