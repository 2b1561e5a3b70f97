"""Commands that serve or play episodes: serve (the HTTP server), tasks, run, play."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from .. import __version__
from ..environment import TriageEnvironment
from ..sandbox import make_sandbox
from ..sandbox.ray_backend import ray_mode
from ..suite.tasks import TaskRegistry
from ..workspace import Workspace
from .common import task_registry


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from ..server import ServerConfig, create_app, limit_malloc_arenas
    from ..server.transport import CoalescingHttp

    limit_malloc_arenas()
    tasks = task_registry(args)
    sandbox = make_sandbox(ray_mode(args.mode, args.ray), owner=args.owner or f"serve-{args.port}")
    cfg = ServerConfig(max_sessions=args.max_sessions, idle_timeout_s=args.idle_timeout)
    app = create_app(tasks, sandbox, cfg)
    print(f"sandbox-env {__version__}: {len(tasks)} tasks, mode={sandbox.mode}, "
          f"http://{args.host}:{args.port}", flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level,
                http=CoalescingHttp,  # a reply's head and body in one send (server/transport.py)
                ws_max_size=4 * cfg.max_body_bytes,  # larger frames: close 1009; larger messages: an error
                # compressing every observation costs more CPU than it saves on a LAN
                ws_per_message_deflate=False)
    return 0


def cmd_tasks(args: argparse.Namespace) -> int:
    registry = task_registry(args, allow_uncertified=True)  # listing says which are certified
    if args.variants:
        return _list_variants(registry, args.json)
    rows = []
    for t in registry:
        data = registry.variants_data(t.id)
        rows.append({"id": t.id, "category": t.category or "-", "difficulty": t.difficulty,
                     "max_steps": t.max_steps, "patches": len(t.patches), "title": t.title,
                     "variants": data.count if data else 1,
                     "train": data.train if data else [0], "test": data.test if data else []})
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    if args.markdown:
        print(tasks_markdown(registry, rows))
        return 0
    print(f"{'id':28s} {'category':12s} {'difficulty':10s} {'steps':>5s} {'patches':>7s} {'variants':>8s} "
          f"{'train':14s} {'test':8s} title")
    for r in rows:
        print(f"{r['id']:28s} {r['category']:12s} {r['difficulty']:10s} {r['max_steps']:5d} "
              f"{r['patches']:7d} {r['variants']:8d} {_indices(r['train']):14s} "
              f"{_indices(r['test']) or '-':8s} {r['title']}")
    print("address a variant as FAMILY@N (reset task=FAMILY@N, or task=FAMILY with seed=N); "
          "`sandbox-env tasks --variants` lists each one")
    return 0


def tasks_markdown(registry: TaskRegistry, rows: list[dict[str, Any]]) -> str:
    """The README's task table: one row per family (the README holds this output verbatim)."""
    lines = ["| family | category | difficulty | steps | variants: train / test "
             "| what the incident report says |", "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| `{r['id']}` | {r['category']} | {r['difficulty']} | {r['max_steps']} | "
                     f"{_indices(r['train']) or '-'} / {_indices(r['test']) or '-'} | {r['title']} |")
    return "\n".join(lines)


def _indices(xs: list[int]) -> str:
    return ",".join(map(str, xs))


def _list_variants(registry: TaskRegistry, as_json: bool) -> int:
    from ..suite.variant_tasks import is_certified

    rows = []
    for address in registry.variant_ids("all"):
        spec = registry.get(address)
        data = registry.variants_data(spec.family)
        m = spec.variant
        rows.append({
            "address": spec.address, "family": spec.family, "variant": spec.variant_index,
            "split": data.split_of(spec.variant_index) if data else "train", "repo_hash": spec.repo_hash,
            "certified": m is None or is_certified(spec.base_task.root, m.index, m.repo_hash),
            "transforms": len(m.transforms) if m else 0, "patches": len(spec.patches),
            "dropped": len(m.patches_dropped) if m else 0, "placement": (m.placement if m else None) or "-"})
    if as_json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{'address':30s} {'split':5s} {'repo hash':23s} {'certified':9s} {'transforms':>10s} "
          f"{'patches':>7s} {'dropped':>7s}  placement")
    for r in rows:
        cert = "variant 0" if r["variant"] == 0 else "yes" if r["certified"] else "no"
        print(f"{r['address']:30s} {r['split']:5s} {r['repo_hash']:23s} {cert:9s} {r['transforms']:10d} "
              f"{r['patches']:7d} {r['dropped']:7d}  {r['placement']}")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    task = task_registry(args).get(args.task)
    ws = Workspace(task.repo_files())
    if args.patch:
        ws.apply_patch(Path(args.patch).read_text() if Path(args.patch).exists()
                       else task.solution_patch if args.patch == "solution"
                       else (task.root / "patches" / args.patch).read_text())
    sandbox = make_sandbox(args.mode)
    try:
        res = sandbox.run(ws, args.command or task.run_command, task.limits, task)
        print(res.output)
        print(f"[{sandbox.mode}] exit={res.exit_code} outcome={res.outcome.value} "
              f"duration={res.duration_s:.1f}s")
        if args.verify:
            v = sandbox.verify(ws, task)
            print(json.dumps(v.model_dump(mode="json"), indent=1))
    finally:
        sandbox.close()
    return 0


def cmd_play(args: argparse.Namespace) -> int:
    from ..actions import parse_action
    from ..suite.oracle import oracle_actions

    tasks = task_registry(args)
    ids = [args.task] if args.task != "all" else tasks.ids()
    sandbox = make_sandbox(args.mode)
    worst = 1.0
    try:
        for tid in ids:
            env = TriageEnvironment(tasks, sandbox)
            obs = env.reset(task=tid)
            for action in oracle_actions(tasks.get(tid)):
                obs = env.step(parse_action(action))
                if args.verbose:
                    print(f"  {action['action_type']:14s} reward={obs.reward:+.3f} "
                          f"status={obs.system_status}")
                if obs.done:
                    break
            st = env.state
            worst = min(worst, st.score or 0.0)
            score = "n/a (not finished: " + obs.system_status + ")" if st.score is None else f"{st.score:.3f}"
            print(f"{tid:28s} mode={obs.mode} verified={bool(st.verdict and st.verdict.passed)} "
                  f"score={score} steps={st.step_count}")
    finally:
        sandbox.close()
    return 0 if worst >= 0.9 else 1
