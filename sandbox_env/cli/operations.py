"""Operator commands: build images and the runner venv, reap leftovers, doctor, and the task
evidence (record traces, certify, fidelity, held-out patches)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..sandbox import backend, make_sandbox, modes
from ..suite.tasks import TaskSpec
from .common import real_sandbox, task_registry


def cmd_images(args: argparse.Namespace) -> int:
    from ..images import build_all

    online = {"online": True, "offline": False, "auto": None}[args.source]
    for tag, image_id in build_all(force=args.force, online=online, server=not args.runner_only).items():
        print(f"{tag}: {image_id[:19]}")
    return 0


def cmd_runner(args: argparse.Namespace) -> int:
    from ..runner_env import build

    pip_args = args.pip_args.split() if args.pip_args else None
    env = build(force=args.force, python=args.python, pip_args=pip_args)
    print(f"{env.path}: torch {env.torch}, Python {env.python_version}")
    return 0


def cmd_reap(args: argparse.Namespace) -> int:
    n = 0
    for mode in modes():  # every backend cleans up after its own crashes
        ok, why = backend(mode).available()
        if ok:
            n += backend(mode).load().cleanup(args.owner)
        else:
            print(f"{mode}: skipped ({why})", file=sys.stderr)
    print(f"removed {n} container(s)")
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from ..quality.doctor import run_doctor

    return run_doctor(print)


def cmd_record(args: argparse.Namespace) -> int:
    from ..suite.traces import (
        Provenance,
        behaviour_states,
        missing_states,
        record_task,
        reverify_task,
        stale_states,
        trace_differences,
    )

    tasks = task_registry(args)
    sandbox, where = real_sandbox(args, "record")
    prov = Provenance(**where)
    differing = 0
    try:
        for tid in args.tasks or tasks.ids():
            task = tasks.get(tid)
            if args.reverify:
                differing += sum(bool(trace_differences(old, new))
                                 for old, new in reverify_task(task, sandbox, prov))
                continue
            if not args.compare:
                only = stale_states(task) if args.stale else missing_states(task) if args.missing else None
                if args.behaviours:
                    wanted = behaviour_states(task)
                    only = wanted if only is None else wanted & only
                record_task(task, sandbox, prov, only=only)
                continue
            import tempfile

            from ..suite.traces import load_traces

            committed = {t.state: t for t in load_traces(task)}
            with tempfile.TemporaryDirectory() as tmp:
                for new in record_task(task, sandbox, prov, out_dir=Path(tmp)):
                    old = committed.get(new.state)
                    diffs = ["not recorded before"] if old is None else trace_differences(old, new)
                    differing += bool(diffs)
                    print(f"  {tid} {new.state}: {'; '.join(diffs) if diffs else 'identical'}")
    finally:
        sandbox.close()
    if args.compare or args.reverify:
        print(f"{differing} state(s) differ beyond timings, pids, ports and temp names")
    return 1 if differing else 0


def cmd_certify(args: argparse.Namespace) -> int:
    from ..quality.certify import certify_targets, certify_task, write
    from ..suite.variant_tasks import keep_certified

    tasks = task_registry(args, allow_uncertified=True)  # certifying is how a variant gets certified
    try:
        targets = certify_targets(tasks, args.tasks, args.variants)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    specs = [tasks.get(t) for t in targets]  # generated and materialised before any run
    out = Path(args.out or ("docs/certification-variants.md" if any(s.variant for s in specs)
                            else "docs/certification.md"))
    sandbox, prov = real_sandbox(args, "certify")
    try:
        results = [certify_task(spec, sandbox, args.runs) for spec in specs]
    finally:
        sandbox.close()
    write(results, prov, out)
    print(out.read_text())
    if args.record_certified:
        for spec, res in zip(specs, results, strict=True):
            if spec.variant is not None and res.certified:
                for path in keep_certified(spec.base_task.root, spec.variant, res.runs,
                                           str(prov.get("source")), res.bug_log):
                    print(f"{spec.id} ({spec.repo_hash}): kept in {path}")
    return 0 if all(r.certified for r in results) else 1


def cmd_fidelity(args: argparse.Namespace) -> int:
    from ..quality.fidelity import write_report

    tasks = task_registry(args)
    selected = [tasks.get(t) for t in args.tasks] if args.tasks else list(tasks)
    out = Path(args.out)
    rate = write_report(selected, out)
    print(out.read_text())
    return 0 if rate >= args.target else 1


def cmd_heldout(args: argparse.Namespace) -> int:
    from ..quality.heldout import batch_variants, judge_mock, load, report, save, score
    from ..sandbox.mock import MockSandbox

    tasks = task_registry(args, allow_uncertified=True)  # a held-out batch may cover any variant
    named = [tasks.get(t) for t in args.tasks] if args.tasks else list(tasks)

    def covered(t: TaskSpec) -> list[TaskSpec]:
        """A family named without a variant: the variants the batch has patches for, if any."""
        found = batch_variants(t, args.batch) if t.variant is None else []
        return [tasks.get(f"{t.family}@{n}") for n in found] or [t]

    selected = [v for t in named for v in covered(t)]
    json_out = Path(args.json_out)
    if args.from_json:  # re-render (or re-score the mock) from a saved run of the real checks
        rows = load(json_out)
        mock = MockSandbox()
        for r in rows:
            judge_mock(r, tasks.get(r.task), mock.verify)
        save(rows, json_out)
    else:
        real = None
        if args.mode != "none":
            sandbox = make_sandbox(args.mode, owner="heldout")
            real = sandbox.verify
        mock = MockSandbox()
        try:
            rows = score(selected, real, mock.verify, workers=args.workers, batch=args.batch,
                         labels=args.labels)
        finally:
            if real is not None:
                sandbox.close()
        if real is not None:
            save(rows, json_out)
    text = report(rows, args.mode)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text)
    print(text)
    return 0
