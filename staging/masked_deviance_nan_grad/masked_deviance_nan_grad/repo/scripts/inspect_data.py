"""Print what the nightly job trains on: row counts, unit distribution, feature ranges.

    python scripts/inspect_data.py [--set KEY=VALUE ...]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from countcast.config import apply_overrides, compose, preset  # noqa: E402
from countcast.data.schema import NUMERIC, TARGET  # noqa: E402
from countcast.training.ensemble import prepare_data  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", default="nightly")
    ap.add_argument("--set", action="append", default=[])
    args = ap.parse_args()
    cfg = compose(apply_overrides(preset(args.preset), args.set))
    train, holdout, cards, scaler = prepare_data(cfg)
    print(f"stores {cards['store']}, items {cards['item']}; train {len(train)} rows, holdout {len(holdout)} rows")
    for name, table in (("train", train), ("holdout", holdout)):
        y = table[TARGET]
        q = torch.quantile(y, torch.tensor([0.0, 0.01, 0.1, 0.5, 0.9, 0.99, 1.0]))
        print(f"{name} units: mean {float(y.mean()):.2f}; quantiles 0/1/10/50/90/99/100%: "
              + " ".join(f"{float(v):.0f}" for v in q))
        small = {k: int((y == k).sum()) for k in range(1, 4)}
        print(f"{name} rows with 1/2/3 units: {small[1]}/{small[2]}/{small[3]}")
    for c in NUMERIC:
        x = train[c]
        print(f"{c}: standardised range [{float(x.min()):.2f}, {float(x.max()):.2f}] "
              f"(raw mean {scaler.mean[c]:.3f}, std {scaler.std[c]:.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
