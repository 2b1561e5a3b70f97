"""Authoring helper: classifier label of every known state and classifier case (host, no docker)."""
import os, sys
from pathlib import Path
from sandbox_env.suite.tasks import TaskRegistry
from sandbox_env.suite.traces import task_states
from sandbox_env.workspace import Workspace
import tomllib

reg = TaskRegistry(Path(os.environ["SANDBOX_ENV_TASK_ROOT"]), allow_uncertified=True)
name = sys.argv[1] if len(sys.argv) > 1 else "dataloader_worker_rng_duplication"
t = reg.get(name)
bad = 0
for state, want, files in task_states(t):
    got = t.classifier(files)
    bad += got != want
    print("OK " if got == want else "BAD", state, want, got)
cases = t.root / "classifier_cases.toml"
if cases.exists() and "@" not in name:
    for c in tomllib.loads(cases.read_text()).get("case", []):
        ws = Workspace(t.repo_files()); ws.apply_patch(c["patch"])
        got = t.classifier(ws.files)
        bad += got != c["label"]
        print("OK " if got == c["label"] else "BAD", "case:" + c["name"], c["label"], got)
print("mismatches:", bad)
