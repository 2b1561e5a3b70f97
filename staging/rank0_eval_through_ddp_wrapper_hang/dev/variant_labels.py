"""Author's helper: the mock classifier on every labelled state of every variant (inverse renames)."""
import sys, tomllib
from pathlib import Path
from sandbox_env.suite.tasks import TaskRegistry
from sandbox_env.workspace import apply_patch
root = Path("staging/rank0_eval_through_ddp_wrapper_hang")
reg = TaskRegistry(root)
fam = "rank0_eval_through_ddp_wrapper_hang"
cases = tomllib.loads((root / fam / "classifier_cases.toml").read_text())["case"]
for n in range(10):
    t = reg.get(f"{fam}@{n}") if n else reg.get(fam)
    bad = []
    base = t.repo_files()
    if t.classifier(base) != "bug":
        bad.append(("original", t.classifier(base)))
    sol = apply_patch(base, (t.root / "solution.patch").read_text())
    if t.classifier(sol) != "fixed":
        bad.append(("solution", t.classifier(sol)))
    for p in t.patches:
        got = t.classifier(apply_patch(base, t.patch_text(p)))
        if got != p.behaviour:
            bad.append((p.file, got))
    print(n, "bad:", bad)
