"""tools/dev_check.py --patch for every labelled patch (and the solution, the original), N at a time;
one summary line per state: label, expected, verdict, seconds, first reason.

    python staging/sparse_export_missing_zero_days/tools/dev_check_pool.py [N] [NAME ...]
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
FAMILY = Path(__file__).resolve().parents[1] / "sparse_export_missing_zero_days"
LOGS = Path(tempfile.gettempdir()) / "sparse_export_missing_zero_days-pool"


def one(item: dict) -> str:
    name = item["file"]
    args = ["--solution"] if name == "solution" else [] if name == "original" else ["--patch", str(FAMILY / "patches" / name)]
    t0 = time.time()
    p = subprocess.run(["nice", "-n", "19", sys.executable, "tools/dev_check.py", str(FAMILY), *args],
                       cwd=ROOT, capture_output=True, text=True)
    dt = time.time() - t0
    (LOGS / f"{name}.log").write_text(p.stdout + p.stderr)
    m = re.search(r"--- verdict \(([0-9.]+)s\): (\{.*)", p.stdout, re.S)
    verdict, secs = {}, dt
    if m:
        secs = float(m.group(1))
        try:
            verdict = json.loads(m.group(2))
        except json.JSONDecodeError:
            verdict = {"passed": '"passed": true' in m.group(2), "reasons": [m.group(2)[-400:]]}
    passed = bool(verdict.get("passed"))
    want = item["label"] in ("correct", "fixed")
    reason = (verdict.get("reasons") or ["(no verdict)"])[0].replace("\n", " ")[:260]
    line = (f"| {name} | {item['label']} | {'pass' if want else 'fail'} | {'pass' if passed else 'fail'}"
            f"{' (OK)' if passed == want else ' MISMATCH'} | {reason if not passed else ''} | {secs:.0f} |")
    print(line, flush=True)
    return line


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    LOGS.mkdir(exist_ok=True)
    items = [{"file": "original", "label": "bug"}, {"file": "solution", "label": "fixed"}]
    items += tomllib.loads((FAMILY / "patches" / "labels.toml").read_text())["patch"]
    if sys.argv[2:]:
        items = [i for i in items if i["file"] in sys.argv[2:]]
    with ThreadPoolExecutor(n) as pool:
        lines = list(pool.map(one, items))
    bad = sum("MISMATCH" in x for x in lines)
    print(f"{len(lines)} states, {bad} mismatches")
    sys.exit(1 if bad else 0)
