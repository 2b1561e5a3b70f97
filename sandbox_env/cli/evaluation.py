"""Evaluation commands: agent (the baseline LLM agent against a server), eval, report."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import RequestError
from .common import task_registry


def cmd_agent(args: argparse.Namespace) -> int:
    from ..agent import main as agent_main

    return agent_main(
        json_out=args.json_out, env_url=args.env_url, api_base_url=args.api_base_url,
        model=args.model, tasks=args.tasks, seed=args.seed, temperature=args.temperature,
        max_tokens=args.max_tokens, llm_retries=args.max_retries,
        max_consecutive_failures=args.max_failures, history_window=args.history_window,
        health_timeout_s=args.health_timeout, request_timeout_s=args.request_timeout,
    )


def cmd_eval(args: argparse.Namespace) -> int:
    from ..eval import EvalConfig, EvalConfigError, make_agent, parse_seeds, run_eval
    from ..eval.progress import summary_lines
    from ..sandbox.ray_backend import ray_mode

    try:
        seeds = parse_seeds(args.seeds, args.episodes)
        tasks = (None if args.tasks in (None, "", "all")
                 else [t.strip() for t in args.tasks.split(",") if t.strip()])
        llm = {"model": args.model, "api_base_url": args.api_base_url, "temperature": args.temperature,
               "max_tokens": args.max_tokens, "llm_retries": args.max_retries,
               "request_timeout_s": args.request_timeout}
        agent = make_agent(args.agent, label=args.label, llm_overrides=llm, replay_agent=args.replay_agent)
        cfg = EvalConfig(agent=args.agent, tasks=tasks, split=args.split, seeds=seeds,
                         concurrency=args.concurrency,
                         force_concurrency=args.force_concurrency, infra_retries=args.infra_retries,
                         mode=ray_mode(args.mode, args.ray), out=Path(args.out),
                         progress=False if args.no_progress else None, owner=args.owner)
        res = run_eval(cfg, task_registry(args), agent)
    except (EvalConfigError, ValueError, RequestError) as exc:
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
    from ..eval.report import ReportError, build_report

    try:
        res = build_report(Path(args.dir), title=args.title)
    except ReportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"{res.html}\n{res.markdown}\n{res.trajectories} trajectory pages in "
          f"{Path(args.dir) / 'trajectories'}, plots in {Path(args.dir) / 'plots'}")
    return 0
