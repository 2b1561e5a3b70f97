"""Record the regression-gate baseline of a config (release managers run this when a release
changes the numbers on purpose, and say so in the CHANGELOG).

    python scripts/record_baseline.py              # the nightly preset
    python scripts/record_baseline.py --preset glm
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from countcast.config import compose, preset  # noqa: E402
from countcast.evaluation.gate import config_key  # noqa: E402
from countcast.training.ensemble import train_ensemble  # noqa: E402
from countcast.version import __version__  # noqa: E402

BASELINES = Path(__file__).resolve().parents[1] / "baselines" / "nightly.json"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", default="nightly")
    args = ap.parse_args()
    cfg = preset(args.preset)
    res = train_ensemble(compose(cfg))
    data = json.loads(BASELINES.read_text()) if BASELINES.exists() else {"runs": {}}
    data["runs"][config_key(cfg.to_dict())] = {
        "preset": args.preset, "version": __version__, "seed": cfg.seed,
        "members": [round(m.holdout_deviance, 8) for m in res.members],
        "ensemble": round(res.holdout_deviance, 8),
    }
    BASELINES.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    print(f"recorded {args.preset} ({config_key(cfg.to_dict())}) in {BASELINES}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
