"""The family-generic assertions of tests/test_task_suite.py, test_classifier_cases.py and
test_variants.py's inverse-rename test, run on the staged family (tests hard-code task_repos/)."""
import re, sys, tomllib
from collections import Counter
from pathlib import Path
from sandbox_env.analysis import UNSURE
from sandbox_env.tasks import TaskRegistry
from sandbox_env.traces import task_states
from sandbox_env.workspace import Workspace, apply_patch
from sandbox_env.sandbox.mock import MockSandbox
ROOT = Path(ROOT + "/staging/iterable_dataset_worker_duplication")
reg = TaskRegistry(ROOT, allow_uncertified=True)
fam = "iterable_dataset_worker_duplication"
t = reg.get(fam)
bad = 0
def ok(cond, msg):
    global bad
    if not cond:
        bad += 1
        print("FAIL", msg)
files = t.repo_files()
for path, text in files.items():
    ok(not re.search(r"#\s*(BUG|FIXME|XXX|HACK)\b", text, re.IGNORECASE), path)
ok(len(t.hints) >= 2 and len(t.concepts) >= 3 and t.reference_explanation, "prose")
kinds = Counter(p.label for p in t.patches)
ok(len(t.patches) >= 12 and kinds["correct"] >= 3 and kinds["wrong"] >= 3 and kinds["cheat"] >= 4, kinds)
for state, want, fs in task_states(t):
    ok(t.classifier(fs) == want, (state, want, t.classifier(fs)))
data = tomllib.loads((t.root / "classifier_cases.toml").read_text())
cases = data["case"]
for c in cases:
    ok(t.classifier(apply_patch(files, c["patch"])) == c["label"], c["name"])
labels = [c["label"] for c in cases]
ok(len(cases) >= max(15, data.get("min_cases", 0)), "cases")
ok(labels.count("fixed") >= max(3, data.get("min_fixed", 0)) and labels.count(UNSURE) >= max(3, data.get("min_unsure", 0)), labels)
ok({c["label"] for c in cases} - {UNSURE} <= {p.behaviour for p in t.patches} | {"bug", "fixed"}, "case labels")
mock = MockSandbox()
for p in t.patches:
    ws = Workspace(t.repo_files()); ws.apply_patch(t.patch_text(p))
    try:
        ok(mock.verify(ws, t).passed == p.should_pass, ("mock", p.file))
    except Exception as e:
        print("mock verify error (no traces yet?)", p.file, type(e).__name__, str(e)[:120]); break
vd = reg.variants_data(fam)
for i in range(1, vd.count):
    spec = reg.get(f"{fam}@{i}")
    for state, behaviour, fs in task_states(spec):
        ok(spec.classifier(fs) == behaviour, (spec.id, state, spec.classifier(fs)))
print("failures:", bad)
