"""Write shelfcast data files (region exports, catalogue, stores, promos): repo/data and the check's export sets.

    GSEED=5 SHAPE=10 AR=0.1 SCALE=0.45 python make_exports.py ../sparse_export_missing_zero_days/repo/data
    GSEED=11 SHAPE=10 AR=0.1 SCALE=0.45 SPARSE_REGION=east PILOT=W1,W2 PILOT_FROM=35 RETURNS=south python make_exports.py ../sparse_export_missing_zero_days/checks/exports_a
    GSEED=17 SHAPE=10 AR=0.1 SCALE=0.45 SPARSE_REGION=south PILOT=N2,N4 PILOT_FROM=49 RETURNS=west python make_exports.py ../sparse_export_missing_zero_days/checks/exports_b
"""

import datetime as dt
import sys
from pathlib import Path

import numpy as np

OUT = Path(sys.argv[1])
import os
SHAPE = float(os.environ.get("SHAPE", "3"))
AR = float(os.environ.get("AR", "0.25"))
SCALE = float(os.environ.get("SCALE", "1"))
rng = np.random.default_rng(int(os.environ.get("GSEED", "20261130")))
START = dt.date(2026, 9, 7)
DAYS = 84
REGIONS = {"north": "N", "east": "E", "south": "S", "west": "W"}
ITEMS = ["SKU-1043", "SKU-1107", "SKU-1212", "SKU-1288", "SKU-1351", "SKU-1420", "SKU-1466", "SKU-1502",
         "SKU-1575", "SKU-1630"]
ERP_NORTH = 0            # the whole north file comes from the new ERP (it re-exported its history)
SPARSE_REGION = os.environ.get("SPARSE_REGION", "north")
ERP_EAST_PILOT = tuple(os.environ.get("PILOT", "E3,E4").split(","))
ERP_EAST_FROM = int(os.environ.get("PILOT_FROM", "42"))       # 2026-10-19

item_rate = dict(zip(ITEMS, [0.35, 2.8, 0.6, 1.4, 0.25, 4.0, 0.9, 0.45, 1.9, 0.7]))
dow_f = np.array([0.9, 0.85, 0.9, 1.0, 1.15, 1.4, 1.2])  # Mon..Sun
promos = []
for it in ITEMS:
    for _ in range(rng.integers(1, 4)):
        s = int(rng.integers(0, DAYS - 7))
        promos.append((it, s, s + int(rng.integers(3, 7))))
promo = {(it, d) for it, s, e in promos for d in range(s, e + 1)}

stores, catalog, rows = [], [], {r: [] for r in REGIONS}
for region, p in REGIONS.items():
    for k in range(1, 5):
        st = f"{p}{k}"
        stores.append((st, region, float(np.round(rng.uniform(0.6, 1.5), 2))))
for st, region, sf in stores:
    for it in ITEMS:
        u = rng.random()
        if u < 0.05:
            continue
        lo, hi = 0, DAYS - 1
        if u < 0.2:
            lo = int(rng.integers(8, 50))
        elif u < 0.3:
            hi = int(rng.integers(40, 78))
        catalog.append((st, it, lo, hi))
        level = 0.0
        for d in range(lo, hi + 1):
            level = 0.8 * level + rng.normal(0, AR)
            date = START + dt.timedelta(days=d)
            mu = item_rate[it] * sf * dow_f[date.weekday()] * (1.9 if (it, d) in promo else 1.0) * np.exp(level)
            lam = rng.gamma(SHAPE, SCALE * mu / SHAPE)
            y = int(rng.poisson(lam))
            if region == os.environ.get("RETURNS", "east") and y > 0 and rng.random() < 0.02:
                y = -int(rng.integers(1, 3))  # a returned unit netted into the day
            sparse = region == SPARSE_REGION or (st in ERP_EAST_PILOT and d >= ERP_EAST_FROM)
            if sparse and y == 0:
                continue
            rows[region].append((d, st, it, y))


def day(d):
    return (START + dt.timedelta(days=int(d))).isoformat()


(OUT / "export").mkdir(parents=True, exist_ok=True)
for region, rs in rows.items():
    rs.sort()
    with open(OUT / "export" / f"{region}.csv", "w") as f:
        f.write("date,store,item,units\n")
        for d, st, it, y in rs:
            f.write(f"{day(d)},{st},{it},{y}\n")
with open(OUT / "catalog.csv", "w") as f:
    f.write("store,item,listed_from,listed_to\n")
    for st, it, lo, hi in sorted(catalog):
        f.write(f"{st},{it},{day(lo)},{day(hi)}\n")
with open(OUT / "stores.csv", "w") as f:
    f.write("store,region,format\n")
    for st, region, sf in stores:
        f.write(f"{st},{region},{'large' if sf > 1.1 else 'small'}\n")
with open(OUT / "promos.csv", "w") as f:
    f.write("item,promo_from,promo_to\n")
    for it, s, e in sorted(promos):
        f.write(f"{it},{day(s)},{day(e)}\n")
for region, rs in rows.items():
    ys = np.array([r[3] for r in rs])
    print(region, len(rs), "zeros", int((ys == 0).sum()), "neg", int((ys < 0).sum()), "mean", ys.mean().round(2))
print("catalog", len(catalog), "listed days", sum(hi - lo + 1 for _, _, lo, hi in catalog))
