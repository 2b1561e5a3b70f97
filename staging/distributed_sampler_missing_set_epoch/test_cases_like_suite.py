"""tests/test_classifier_cases.py's assertions, pointed at this staged family (run from the repo root)."""
import tomllib
from pathlib import Path

from sandbox_env.analysis import UNSURE
from sandbox_env.suite.tasks import TaskRegistry
from sandbox_env.workspace import apply_patch

ROOT = Path(__file__).parent
task = next(t for t in TaskRegistry(ROOT) if t.id == "distributed_sampler_missing_set_epoch")
mix = tomllib.loads((task.root / "classifier_cases.toml").read_text())
repo = {p.relative_to(task.root / "repo").as_posix(): p.read_text()
        for p in (task.root / "repo").rglob("*") if p.is_file()}
for c in mix["case"]:
    assert task.classifier(apply_patch(repo, c["patch"])) == c["label"], c["name"]
labels = [c["label"] for c in mix["case"]]
assert len(labels) >= mix["min_cases"] and labels.count("fixed") >= 3 and labels.count(UNSURE) >= 5
assert set(labels) - {UNSURE} <= {p.behaviour for p in task.patches} | {"bug", "fixed"}
print("cases ok:", len(labels), "patches:", len(task.patches))
