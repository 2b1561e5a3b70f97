"""Command line: `sandbox-env serve | tasks | run | play | record`."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

from . import __version__
from .environment import TriageEnvironment
from .sandbox import Sandbox, SandboxUnavailable, backend, make_sandbox, mode_choices, modes
from .sandbox.docker.runtime import RUNTIME_ENV, RUNTIMES
from .tasks import TaskError, TaskRegistry, UnknownTask
from .workspace import Workspace


def _registry(args: argparse.Namespace) -> TaskRegistry:
    return TaskRegistry(Path(args.task_root) if args.task_root else None)


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from .server import ServerConfig, create_app, limit_malloc_arenas

    limit_malloc_arenas()
    tasks = _registry(args)
    sandbox = make_sandbox(args.mode, owner=args.owner or f"serve-{args.port}")
    cfg = ServerConfig(max_sessions=args.max_sessions, idle_timeout_s=args.idle_timeout)
    app = create_app(tasks, sandbox, cfg)
    print(f"sandbox-env {__version__}: {len(tasks)} tasks, mode={sandbox.mode}, "
          f"http://{args.host}:{args.port}", flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level,
                ws_max_size=4 * cfg.max_body_bytes,  # larger frames: close 1009; larger messages: an error
                # compressing every observation costs more CPU than it saves on a LAN
                ws_per_message_deflate=False)
    return 0


def cmd_tasks(args: argparse.Namespace) -> int:
    tasks = list(_registry(args))
    rows = [{"id": t.id, "difficulty": t.difficulty, "max_steps": t.max_steps,
             "patches": len(t.patches), "title": t.title} for t in tasks]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{'id':28s} {'difficulty':10s} {'steps':>5s} {'patches':>7s}  title")
    for r in rows:
        print(f"{r['id']:28s} {r['difficulty']:10s} {r['max_steps']:5d} {r['patches']:7d}  {r['title']}")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    task = _registry(args).get(args.task)
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
    from .actions import parse_action
    from .oracle import oracle_actions

    tasks = _registry(args)
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


def _real_sandbox(args: argparse.Namespace, owner: str) -> tuple[Sandbox, dict[str, Any]]:
    """A sandbox that executes for real and where its runs happen (image, torch version)."""
    sandbox = make_sandbox(args.mode, owner=owner)
    return sandbox, {"source": sandbox.mode, **sandbox.provenance()}


def cmd_record(args: argparse.Namespace) -> int:
    from .traces import Provenance, record_task

    tasks = _registry(args)
    sandbox, where = _real_sandbox(args, "record")
    prov = Provenance(**where)
    differing = 0
    try:
        for tid in args.tasks or tasks.ids():
            task = tasks.get(tid)
            if not args.compare:
                record_task(task, sandbox, prov)
                continue
            import tempfile

            from .traces import load_traces, trace_differences

            committed = {t.state: t for t in load_traces(task)}
            with tempfile.TemporaryDirectory() as tmp:
                for new in record_task(task, sandbox, prov, out_dir=Path(tmp)):
                    old = committed.get(new.state)
                    diffs = ["not recorded before"] if old is None else trace_differences(old, new)
                    differing += bool(diffs)
                    print(f"  {tid} {new.state}: {'; '.join(diffs) if diffs else 'identical'}")
    finally:
        sandbox.close()
    if args.compare:
        print(f"{differing} state(s) differ beyond timings, pids, ports and temp names")
    return 1 if differing else 0


def cmd_images(args: argparse.Namespace) -> int:
    from .images import build_all

    online = {"online": True, "offline": False, "auto": None}[args.source]
    for tag, image_id in build_all(force=args.force, online=online, server=not args.runner_only).items():
        print(f"{tag}: {image_id[:19]}")
    return 0


def cmd_runner(args: argparse.Namespace) -> int:
    from .runner_env import build

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
    from .doctor import run_doctor

    return run_doctor(print)


def cmd_certify(args: argparse.Namespace) -> int:
    from .certify import certify_task, write

    tasks = _registry(args)
    sandbox, prov = _real_sandbox(args, "certify")
    try:
        results = [certify_task(tasks.get(t), sandbox, args.runs) for t in (args.tasks or tasks.ids())]
    finally:
        sandbox.close()
    write(results, prov, Path(args.out))
    print(Path(args.out).read_text())
    return 0 if all(r.certified for r in results) else 1


def cmd_fidelity(args: argparse.Namespace) -> int:
    from .fidelity import write_report

    tasks = _registry(args)
    selected = [tasks.get(t) for t in args.tasks] if args.tasks else list(tasks)
    out = Path(args.out)
    rate = write_report(selected, out)
    print(out.read_text())
    return 0 if rate >= args.target else 1


def cmd_heldout(args: argparse.Namespace) -> int:
    from .heldout import judge_mock, load, report, save, score
    from .sandbox.mock import MockSandbox

    tasks = _registry(args)
    selected = [tasks.get(t) for t in args.tasks] if args.tasks else list(tasks)
    json_out, md_out = Path(args.json_out), Path(args.out)
    if args.from_json:  # re-render (or re-score the mock) from a saved run of the real checks
        rows = load(json_out)
        mock = MockSandbox()
        for r in rows:
            judge_mock(r, tasks.get(r.task), mock.verify)
        backend = args.mode
    else:
        real = None
        if args.mode != "none":
            sandbox = make_sandbox(args.mode, owner="heldout")
            real = sandbox.verify
        mock = MockSandbox()
        try:
            rows = score(selected, real, mock.verify, workers=args.workers)
        finally:
            if real is not None:
                sandbox.close()
        backend = args.mode
        if real is not None:
            save(rows, json_out)
    md_out.parent.mkdir(parents=True, exist_ok=True)
    md_out.write_text(report(rows, backend))
    print(md_out.read_text())
    return 0


def cmd_agent(args: argparse.Namespace) -> int:
    from .agent import main as agent_main

    return agent_main(
        json_out=args.json_out, env_url=args.env_url, api_base_url=args.api_base_url,
        model=args.model, tasks=args.tasks, seed=args.seed, temperature=args.temperature,
        max_tokens=args.max_tokens, llm_retries=args.max_retries,
        max_consecutive_failures=args.max_failures, history_window=args.history_window,
        health_timeout_s=args.health_timeout, request_timeout_s=args.request_timeout,
    )


def cmd_eval(args: argparse.Namespace) -> int:
    from .eval import EvalConfig, EvalConfigError, make_agent, parse_seeds, run_eval
    from .eval.runner import summary_lines

    try:
        seeds = parse_seeds(args.seeds, args.episodes)
        tasks = (None if args.tasks in (None, "", "all")
                 else [t.strip() for t in args.tasks.split(",") if t.strip()])
        llm = {"model": args.model, "api_base_url": args.api_base_url, "temperature": args.temperature,
               "max_tokens": args.max_tokens, "llm_retries": args.max_retries,
               "request_timeout_s": args.request_timeout}
        agent = make_agent(args.agent, label=args.label, llm_overrides=llm, replay_agent=args.replay_agent)
        cfg = EvalConfig(agent=args.agent, tasks=tasks, seeds=seeds, concurrency=args.concurrency,
                         force_concurrency=args.force_concurrency, mode=args.mode, out=Path(args.out),
                         progress=False if args.no_progress else None, owner=args.owner)
        res = run_eval(cfg, _registry(args), agent)
    except (EvalConfigError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for line in summary_lines(res.summary):
        print(line)
    print(f"[eval] {res.out}/episodes.jsonl and summary.json written; render the report with "
          f"`sandbox-env report {res.out}`")
    if res.replay_mismatches:
        print(f"[eval] replay: {res.replay_mismatches} episode(s) did not reproduce their recording",
              file=sys.stderr)
    return 130 if res.interrupted else 1 if res.replay_mismatches else 0


def cmd_report(args: argparse.Namespace) -> int:
    from .eval.report import ReportError, build_report

    try:
        res = build_report(Path(args.dir), title=args.title)
    except ReportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"{res.html}\n{res.markdown}\n{res.trajectories} trajectory pages in "
          f"{Path(args.dir) / 'trajectories'}, plots in {Path(args.dir) / 'plots'}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="sandbox-env", description=__doc__)
    p.add_argument("--version", action="version", version=__version__)
    p.add_argument("--task-root", help="folder of task repos (default: ./task_repos)")
    sub = p.add_subparsers(dest="cmd", required=True)

    s = sub.add_parser("serve", help="run the HTTP server")
    s.add_argument("--mode", choices=mode_choices(), default="mock")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=8000)
    s.add_argument("--max-sessions", type=int, default=64)
    s.add_argument("--idle-timeout", type=float, default=900.0)
    s.add_argument("--log-level", default="info")
    s.add_argument("--owner", help="label for this server's containers (default serve-PORT); "
                                   "its leftovers are reaped at start and on shutdown")
    s.set_defaults(fn=cmd_serve)

    s = sub.add_parser("tasks", help="list the tasks")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_tasks)

    s = sub.add_parser("run", help="run a task repo (original or patched) and print the real output")
    s.add_argument("task")
    s.add_argument("--mode", choices=mode_choices(), default="mock")
    s.add_argument("--patch", help="'solution', a file in patches/, or a path")
    s.add_argument("--command", help="command to run instead of the task's run command")
    s.add_argument("--verify", action="store_true", help="also run the hidden checks")
    s.set_defaults(fn=cmd_run)

    s = sub.add_parser("play", help="play an agent through the environment")
    s.add_argument("task", help="task id or 'all'")
    s.add_argument("--oracle", action="store_true", required=True,
                   help="apply the reference fix (the only built-in player for now)")
    s.add_argument("--mode", choices=mode_choices(), default="mock")
    s.add_argument("-v", "--verbose", action="store_true")
    s.set_defaults(fn=cmd_play)

    s = sub.add_parser("images", help="build the sandbox images")
    s.add_argument("action", choices=["build"])
    s.add_argument("--force", action="store_true", help="rebuild even if present")
    s.add_argument("--source", choices=["auto", "online", "offline"], default="auto",
                   help="online: official slim image + PyTorch index; offline: Debian bootstrap "
                        "+ local wheelhouse; auto: offline when no registry answers")
    s.add_argument("--runner-only", action="store_true")
    s.set_defaults(fn=cmd_images)

    s = sub.add_parser("runner", help="build the runner venv process mode runs with (torch 2.13.0 CPU)")
    s.add_argument("action", choices=["build"])
    s.add_argument("--force", action="store_true", help="rebuild even if current")
    s.add_argument("--python", help="base interpreter (default: /usr/bin/python3 when it is this "
                                    "Python's minor version)")
    s.add_argument("--pip-args", help="extra pip arguments, e.g. '--index-url "
                                      "https://download.pytorch.org/whl/cpu'")
    s.set_defaults(fn=cmd_runner)

    s = sub.add_parser("reap", help="remove leftover sandbox containers and volumes")
    s.add_argument("--owner", help="only this owner's (default: all sandbox-env containers)")
    s.set_defaults(fn=cmd_reap)

    s = sub.add_parser("doctor", help="check the Docker engine, images, limits and a smoke run")
    s.set_defaults(fn=cmd_doctor)

    s = sub.add_parser("certify", help="run each unfixed repo and its reference fix K times")
    s.add_argument("tasks", nargs="*")
    s.add_argument("--runs", type=int, default=5)
    s.add_argument("--mode", choices=mode_choices(real=True, auto=False), default="docker")
    s.add_argument("--out", default="docs/certification.md")
    s.set_defaults(fn=cmd_certify)

    s = sub.add_parser("fidelity", help="mock vs docker verdicts over every labelled state, "
                                        "leave-one-out")
    s.add_argument("tasks", nargs="*")
    s.add_argument("--out", default="docs/fidelity.md")
    s.add_argument("--target", type=float, default=0.98)
    s.set_defaults(fn=cmd_fidelity)

    s = sub.add_parser("heldout", help="score the real checks and the mock on held-out patches "
                       "(task_repos/*/heldout: written by another hand, never used for tuning)")
    s.add_argument("--mode", choices=[*mode_choices(real=True, auto=False), "none"], default="docker",
                   help="the real backend (none: the mock only)")
    s.add_argument("--tasks", nargs="*")
    s.add_argument("--workers", type=int, default=1)
    s.add_argument("--json-out", default="docs/heldout.json", help="the real verdicts, saved")
    s.add_argument("--out", default="docs/heldout.md")
    s.add_argument("--from-json", action="store_true",
                   help="reuse the saved real verdicts; only the mock is judged again")
    s.set_defaults(fn=cmd_heldout)

    s = sub.add_parser("agent", help="baseline LLM agent: play tasks of a running server with an "
                                     "OpenAI-compatible model ([START]/[STEP]/[END] on stdout)")
    s.add_argument("--env-url", help="environment server (default: $ENV_URL or http://localhost:8000)")
    s.add_argument("--api-base-url", help="model endpoint (default: $API_BASE_URL or "
                                          "https://router.huggingface.co/v1); key: $HF_TOKEN or "
                                          "$OPENAI_API_KEY")
    s.add_argument("--model", help="model name (default: $MODEL_NAME or Qwen/Qwen2.5-72B-Instruct)")
    s.add_argument("--tasks", help="comma-separated task ids (default: $TASKS or every task of the server)")
    s.add_argument("--seed", type=int, help="seed for reset and the model (default: $SEED)")
    s.add_argument("--temperature", type=float, help="sampling temperature (default 0)")
    s.add_argument("--max-tokens", type=int, help="tokens per reply (default 2048)")
    s.add_argument("--max-retries", type=int, help="retries of a model call on connection/429/5xx "
                                                   "errors, with backoff (default 3)")
    s.add_argument("--max-failures", type=int, help="unusable replies in a row that end an episode "
                                                    "(default 3)")
    s.add_argument("--history-window", type=int, help="turns kept verbatim in the prompt (default 4)")
    s.add_argument("--health-timeout", type=float, help="seconds to wait for the server's /health "
                                                        "(default 120)")
    s.add_argument("--request-timeout", type=float, help="seconds per model request (default 120)")
    s.add_argument("--json-out", help="also write the results (RunSummary) as JSON to this file")
    s.set_defaults(fn=cmd_agent)

    s = sub.add_parser("eval", help="run an agent over tasks x seeds in parallel, resumably, into --out "
                                    "(episodes.jsonl, summary.json)")
    s.add_argument("--agent", default="oracle", help="oracle | random | llm | replay:FILE "
                                                     "(FILE: an episodes.jsonl or its directory)")
    s.add_argument("--label", help="the agent's name in the records (default: oracle, random, llm:MODEL, "
                                   "replay:AGENT)")
    s.add_argument("--tasks", help="comma-separated task ids or 'all' (default: all; replay: the "
                                   "recorded ones)")
    s.add_argument("--seeds", help="comma-separated seeds, e.g. 0,1,2 (default: 0; replay: the "
                                   "recorded ones)")
    s.add_argument("--episodes", type=int, help="N episodes per task: seeds 0..N-1")
    s.add_argument("--concurrency", type=int, default=4, help="episodes at once (docker: capped at the CPU "
                                                              "count unless --force-concurrency)")
    s.add_argument("--force-concurrency", action="store_true")
    s.add_argument("--mode", choices=mode_choices(untrusted=True), default="auto",
                   help="auto: the first tier that works here (docker when the engine and image "
                        "are there, else mock)")
    s.add_argument("--out", required=True, help="output directory; rerunning with it resumes")
    s.add_argument("--no-progress", action="store_true", help="one line per episode instead of the live "
                                                              "display (automatic when stdout is no TTY)")
    s.add_argument("--owner", help="label of the containers (docker; default eval-PID-RANDOM)")
    s.add_argument("--replay-agent", help="replay: which agent's episodes when FILE holds several")
    s.add_argument("--model", help="llm: model name (default: $MODEL_NAME or Qwen/Qwen2.5-72B-Instruct)")
    s.add_argument("--api-base-url", help="llm: model endpoint (default: $API_BASE_URL); key: $HF_TOKEN "
                                          "or $OPENAI_API_KEY")
    s.add_argument("--temperature", type=float, help="llm: sampling temperature (default 0)")
    s.add_argument("--max-tokens", type=int, help="llm: tokens per reply (default 2048)")
    s.add_argument("--max-retries", type=int, help="llm: retries of a model call (default 3)")
    s.add_argument("--request-timeout", type=float, help="llm: seconds per model request (default 120)")
    s.set_defaults(fn=cmd_eval)

    s = sub.add_parser("report", help="render an eval directory: report.html (self-contained, plots "
                                      "inline), report.md, trajectories/*.html")
    s.add_argument("dir")
    s.add_argument("--title")
    s.set_defaults(fn=cmd_report)

    s = sub.add_parser("record", help="record real traces of every labelled state for mock mode")
    s.add_argument("tasks", nargs="*")
    s.add_argument("--mode", choices=mode_choices(real=True, auto=False), default="docker")
    s.add_argument("--compare", action="store_true",
                   help="record into a scratch dir and compare with the committed traces")
    s.set_defaults(fn=cmd_record)
    for name, s in sub.choices.items():  # every command that builds a sandbox takes the runtime
        if name == "doctor" or any("--mode" in a.option_strings for a in s._actions):
            s.add_argument("--runtime", choices=RUNTIMES,
                           help=f"docker mode: OCI runtime of the sandbox containers (default: "
                                f"${RUNTIME_ENV} or runc; runsc = gVisor, see scripts/runsc.sh)")
    return p


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    args = build_parser().parse_args(argv)
    if getattr(args, "runtime", None):  # read by the docker backend wherever it is built
        os.environ[RUNTIME_ENV] = args.runtime
    try:
        return int(args.fn(args) or 0)
    except (UnknownTask, TaskError, SandboxUnavailable) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
