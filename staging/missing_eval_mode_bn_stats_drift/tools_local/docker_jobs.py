"""`sandbox-env record` / `certify` for this family with a container owner of its own.

The CLI's record and certify label their containers "record" / "certify" (no --owner, and
SANDBOX_ENV_OWNER is read only by the ASGI server), so this mirrors cmd_record / cmd_certify
(sandbox_env/cli/operations.py) with owner fam-missing_eval_mode_bn_stats_drift. Run it under
the shared lock: flock /tmp/sandbox-docker.lock .venv/bin/python <this> ...

  record TASK [--behaviours]              traces of every labelled state (or one per behaviour)
  certify OUT.md RUNS TASK... [--record-certified]
"""
import sys
from pathlib import Path

from sandbox_env.quality.certify import certify_task, write
from sandbox_env.sandbox import make_sandbox
from sandbox_env.suite.tasks import TaskRegistry
from sandbox_env.suite.traces import Provenance, behaviour_states, record_task
from sandbox_env.suite.variant_tasks import keep_certified

OWNER = "fam-missing_eval_mode_bn_stats_drift"


def main() -> int:
    cmd, args = sys.argv[1], [a for a in sys.argv[2:] if not a.startswith("--")]
    flags = {a for a in sys.argv[2:] if a.startswith("--")}
    tasks = TaskRegistry(allow_uncertified=True)
    sandbox = make_sandbox("docker", owner=OWNER)
    prov = {"source": sandbox.mode, **sandbox.provenance()}
    try:
        if cmd == "record":
            for tid in args:
                task = tasks.get(tid)
                only = behaviour_states(task) if "--behaviours" in flags else None
                record_task(task, sandbox, Provenance(**prov), only=only)
            return 0
        out, runs, targets = Path(args[0]), int(args[1]), args[2:]
        specs = [tasks.get(t) for t in targets]
        results = [certify_task(spec, sandbox, runs) for spec in specs]
    finally:
        sandbox.close()
    write(results, prov, out)
    print(out.read_text())
    if "--record-certified" in flags:
        for spec, res in zip(specs, results, strict=True):
            if spec.variant is not None and res.certified:
                for path in keep_certified(spec.base_task.root, spec.variant, res.runs, str(prov.get("source")),
                                           res.bug_log):
                    print(f"{spec.id} ({spec.repo_hash}): kept in {path}")
    return 0 if all(r.certified for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
