"""The nightly regression gate: a night's ensemble must reproduce the recorded baseline of its
config (same seed, same data, same code path -> the same numbers, up to float noise)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from countcast.utils.hashing import digest


@dataclass
class GateResult:
    checked: bool
    passed: bool
    lines: list[str]


def config_key(job_dict: dict) -> str:
    return digest(job_dict)


def load_baselines(path: Path) -> dict:
    if not path.exists():
        return {}
    return json.loads(path.read_text())


def check_against_baseline(job_dict: dict, members: list[float], ensemble: float, path: Path,
                           rtol: float = 1e-5) -> GateResult:
    baselines = load_baselines(path)
    entry = baselines.get("runs", {}).get(config_key(job_dict))
    if entry is None:
        return GateResult(False, True, [f"no baseline recorded for this config ({config_key(job_dict)})"])
    lines, ok = [], True
    want = entry["members"]
    if len(want) != len(members):
        return GateResult(True, False, [f"baseline has {len(want)} members, this run {len(members)}"])
    for k, (got, exp) in enumerate(zip(members, want)):
        rel = abs(got - exp) / abs(exp)
        good = rel <= rtol
        ok &= good
        lines.append(f"member {k}: holdout deviance {got:.6f}  baseline {exp:.6f}  ({rel:+.2e} rel) "
                     f"{'ok' if good else 'MISMATCH'}")
    rel = abs(ensemble - entry["ensemble"]) / abs(entry["ensemble"])
    ok &= rel <= rtol
    lines.append(f"ensemble: holdout deviance {ensemble:.6f}  baseline {entry['ensemble']:.6f}  ({rel:+.2e} rel) "
                 f"{'ok' if rel <= rtol else 'MISMATCH'}")
    return GateResult(True, ok, lines)
