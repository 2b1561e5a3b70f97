import sys, tomllib
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[3]))
from pathlib import Path
from sandbox_env.workspace import apply_patch
FAM = Path(__file__).resolve().parents[1] / "missing_eval_mode_bn_stats_drift"
sys.path.insert(0, str(FAM)); import classifier
repo = {str(p.relative_to(FAM / "repo")): p.read_text() for p in (FAM / "repo").rglob("*") if p.is_file()}
for c in tomllib.loads((FAM / "classifier_cases.toml").read_text())["case"]:
    got = classifier.classify(apply_patch(repo, c["patch"]))
    print("OK " if got == c["label"] else "BAD", c["name"], got, c["label"])
