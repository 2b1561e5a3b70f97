"""Author helper: the classifier's label for the original, the solution, every labelled patch and case."""
import sys
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository
from sandbox_env.suite.tasks import load_task  # noqa: E402
from sandbox_env.workspace import Workspace  # noqa: E402

fam = Path(__file__).resolve().parent / "weights_only_load_rejects_checkpoint"
sys.path.insert(0, str(fam))
import classifier  # noqa: E402

t = load_task(fam)
states = [("original", "bug", None), ("solution", "fixed", (fam / "solution.patch").read_text())]
states += [(p["file"], p["behaviour"], (fam / "patches" / p["file"]).read_text())
           for p in tomllib.loads((fam / "patches/labels.toml").read_text())["patch"]]
cases = fam / "classifier_cases.toml"
if cases.exists():
    states += [(c["name"], c["label"], c["patch"]) for c in tomllib.loads(cases.read_text())["case"]]
bad = 0
for name, want, patch in states:
    ws = Workspace(t.repo_files())
    if patch:
        ws.apply_patch(patch)
    got = classifier.classify(dict(ws.files))
    bad += got != want
    print(f"{'ok ' if got == want else 'BAD'} {name}: {got} (want {want})")
print("mismatches:", bad)
