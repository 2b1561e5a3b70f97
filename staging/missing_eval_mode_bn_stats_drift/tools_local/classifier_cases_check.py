import sys, tomllib
sys.path.insert(0, "/work/main")
from pathlib import Path
from sandbox_env.workspace import apply_patch
FAM = Path("/work/main/staging/missing_eval_mode_bn_stats_drift/missing_eval_mode_bn_stats_drift")
sys.path.insert(0, str(FAM)); import classifier
repo = {str(p.relative_to(FAM / "repo")): p.read_text() for p in (FAM / "repo").rglob("*") if p.is_file()}
for c in tomllib.loads((FAM / "classifier_cases.toml").read_text())["case"]:
    got = classifier.classify(apply_patch(repo, c["patch"]))
    print("OK " if got == c["label"] else "BAD", c["name"], got, c["label"])
