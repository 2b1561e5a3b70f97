"""Random search over a few JobConfig fields, scored on the holdout deviance of the ensemble.

    python scripts/tune.py --trials 8                       # 2-member ensembles
    python scripts/tune.py --trials 4 --set epochs=2 --seed 3

Each trial trains a full (small) ensemble; diverged trials are reported and skipped.
"""

from __future__ import annotations

import argparse
import random
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from countcast.config import apply_overrides, compose, preset  # noqa: E402
from countcast.training.ensemble import train_ensemble  # noqa: E402
from countcast.training.state import TrainingDiverged  # noqa: E402
from countcast.utils.logging import configure  # noqa: E402

SPACE = {
    "lr": [0.003, 0.005, 0.01, 0.02],
    "hidden_dim": [16, 32, 64],
    "depth": [1, 2, 3],
    "embed_dim": [2, 4, 8],
    "weight_decay": [0.0, 1e-4, 1e-3],
    "activation": ["silu", "gelu", "relu"],
    "schedule": ["warmup_cosine", "warmup_linear", "step"],
}


def sample(rng: random.Random) -> dict:
    return {k: rng.choice(v) for k, v in SPACE.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0, help="seed of the search (not of the trials)")
    ap.add_argument("--set", action="append", default=[])
    args = ap.parse_args()
    configure()
    base = apply_overrides(preset("nightly", members=2, eval_every=0), args.set)
    rng = random.Random(args.seed)
    results = []
    for t in range(args.trials):
        params = sample(rng)
        job = replace(base, **params)
        try:
            res = train_ensemble(compose(job))
        except TrainingDiverged as exc:
            print(f"trial {t}: diverged ({exc}); {params}")
            continue
        results.append((res.holdout_deviance, t, params))
        print(f"trial {t}: holdout deviance {res.holdout_deviance:.5f}; {params}")
    if not results:
        print("no trial finished")
        return 1
    results.sort(key=lambda r: r[0])
    best = results[0]
    print(f"best: trial {best[1]} holdout deviance {best[0]:.5f}")
    print("  " + " ".join(f"--set {k}={v}" for k, v in best[2].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
