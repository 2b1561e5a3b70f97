"""Authoring helper: `sandbox-env record` / `certify` for this family with an owner label of its
own (the CLI's record and certify hard-code the owners "record" / "certify"; containers of one
owner reap each other). Same functions the CLI calls (sandbox_env/cli/operations.py); run it
under the shared lock:

  flock /tmp/sandbox-docker.lock .venv/bin/python staging/dataloader_worker_rng_duplication/authoring/docker_ops.py \
      record [--behaviours] [--missing] TASK...
  flock /tmp/sandbox-docker.lock .venv/bin/python .../docker_ops.py certify --runs 5 [--record-certified] TARGET...
"""
import pathlib as _pathlib; ROOT = str(_pathlib.Path(__file__).resolve().parents[3])  # the repository
import argparse
import sys
from pathlib import Path

sys.path.insert(0, ROOT + "")
from sandbox_env.quality.certify import certify_targets, certify_task, write  # noqa: E402
from sandbox_env.sandbox import make_sandbox  # noqa: E402
from sandbox_env.suite.tasks import TaskRegistry  # noqa: E402
from sandbox_env.suite.traces import Provenance, behaviour_states, missing_states, record_task  # noqa: E402
from sandbox_env.suite.variant_tasks import keep_certified  # noqa: E402

OWNER = "fam-dataloader_worker_rng_duplication"
STAGE = Path(ROOT + "/staging/dataloader_worker_rng_duplication")

ap = argparse.ArgumentParser()
ap.add_argument("cmd", choices=["record", "certify"])
ap.add_argument("targets", nargs="+")
ap.add_argument("--behaviours", action="store_true")
ap.add_argument("--missing", action="store_true")
ap.add_argument("--runs", type=int, default=5)
ap.add_argument("--variants")
ap.add_argument("--record-certified", action="store_true")
ap.add_argument("--out", default=str(STAGE / "certification.md"))
a = ap.parse_args()
tasks = TaskRegistry(STAGE, allow_uncertified=True)
sandbox = make_sandbox("docker", owner=OWNER)
where = {"source": sandbox.mode, **sandbox.provenance()}
code = 0
try:
    if a.cmd == "record":
        for tid in a.targets:
            task = tasks.get(tid)
            only = missing_states(task) if a.missing else None
            if a.behaviours:
                only = behaviour_states(task) if only is None else behaviour_states(task) & only
            for t in record_task(task, sandbox, Provenance(**where), only=only):
                print(tid, t.state, t.behaviour, "passed" if t.verdict.passed else t.verdict.outcome, flush=True)
    else:
        specs = [tasks.get(t) for t in certify_targets(tasks, a.targets, a.variants)]
        results = [certify_task(spec, sandbox, a.runs) for spec in specs]
        out = Path(a.out)
        write(results, where, out)
        print(out.read_text())
        code = 0 if all(r.certified for r in results) else 1
        if a.record_certified:
            for spec, res in zip(specs, results, strict=True):
                if spec.variant is not None and res.certified:
                    for path in keep_certified(spec.base_task.root, spec.variant, res.runs,
                                               str(where.get("source")), res.bug_log):
                        print(f"{spec.id} ({spec.repo_hash}): kept in {path}")
finally:
    sandbox.close()
sys.exit(code)
