"""Author's helper: tools/dev_check.one() for one patch, then one RESULT line (passed, outcome, first reason)."""
import pathlib as _pathlib; ROOT = str(_pathlib.Path(__file__).resolve().parents[3])  # the repository
import sys
from pathlib import Path
sys.path.insert(0, ROOT + "/tools")
import dev_check  # noqa: E402
task = Path(sys.argv[1]).resolve()
arg = sys.argv[2]
patch = None if arg == "original" else task / ("solution.patch" if arg == "solution" else f"patches/{arg}")
v = dev_check.one(task, patch, False, True) or {}
print("RESULT", f"passed={v.get('passed')}", f"outcome={v.get('outcome')}", "|", (v.get("reasons") or [""])[0][:400].replace("\n", " "))
