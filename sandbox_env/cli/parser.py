"""The sandbox-env argument parser: every command, its flags and the function that runs it."""

from __future__ import annotations

import argparse
from typing import Any

from .. import __version__
from ..sandbox import mode_choices, tiers
from ..sandbox.docker.runtime import RUNTIME_ENV, RUNTIMES
from . import episodes, evaluation, export, operations

DESCRIPTION = "Command line: `sandbox-env serve | tasks | run | play | record`."


def auto_help() -> str:
    """What ``--mode auto`` does, from the backend table (the same walk doctor reports)."""
    return (f"auto: the first of {' -> '.join(b.name for b in tiers())} that works here "
            "(`sandbox-env doctor` shows which)")
Sub = Any  # argparse's _SubParsersAction (private type)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="sandbox-env", description=DESCRIPTION)
    p.add_argument("--version", action="version", version=__version__)
    p.add_argument("--task-root", help="folder of task repos (default: ./task_repos)")
    sub = p.add_subparsers(dest="cmd", required=True)
    _episode_commands(sub)
    _operator_commands(sub)
    _agent_command(sub)
    _eval_commands(sub)
    _record_command(sub)
    export.add_command(sub)
    _runtime_flag(sub)
    return p


def _episode_commands(sub: Sub) -> None:
    s = sub.add_parser("serve", help="run the HTTP server")
    s.add_argument("--mode", choices=mode_choices(), default="mock", help=auto_help())
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=8000)
    s.add_argument("--max-sessions", type=int, default=None,
                   help="live episodes admitted (default: 1024 in mock mode, 64 in real modes)")
    s.add_argument("--idle-timeout", type=float, default=900.0)
    s.add_argument("--log-level", default="info")
    s.add_argument("--ray", metavar="ADDRESS", help="run --mode on the nodes of this Ray cluster "
                                                    "(docs/scale-out.md)")
    s.add_argument("--owner", help="label for this server's containers (default serve-PORT); "
                                   "its leftovers are reaped at start and on shutdown")
    s.set_defaults(fn=episodes.cmd_serve)

    s = sub.add_parser("tasks", help="list the task families, their variants and splits")
    s.add_argument("--json", action="store_true")
    s.add_argument("--markdown", action="store_true", help="one row per family as a Markdown table "
                                                          "(the README's task table)")
    s.add_argument("--variants", action="store_true",
                   help="one row per variant (family@N): split, repo hash, certified or not")
    s.set_defaults(fn=episodes.cmd_tasks)

    s = sub.add_parser("run", help="run a task repo (original or patched) and print the real output")
    s.add_argument("task")
    s.add_argument("--mode", choices=mode_choices(), default="mock", help=auto_help())
    s.add_argument("--patch", help="'solution', a file in patches/, or a path")
    s.add_argument("--command", help="command to run instead of the task's run command")
    s.add_argument("--verify", action="store_true", help="also run the hidden checks")
    s.set_defaults(fn=episodes.cmd_run)

    s = sub.add_parser("play", help="play an agent through the environment")
    s.add_argument("task", help="task id or 'all'")
    s.add_argument("--oracle", action="store_true", required=True,
                   help="apply the reference fix (the only built-in player for now)")
    s.add_argument("--mode", choices=mode_choices(), default="mock", help=auto_help())
    s.add_argument("-v", "--verbose", action="store_true")
    s.set_defaults(fn=episodes.cmd_play)


def _operator_commands(sub: Sub) -> None:
    s = sub.add_parser("images", help="build the sandbox images")
    s.add_argument("action", choices=["build"])
    s.add_argument("--force", action="store_true", help="rebuild even if present")
    s.add_argument("--source", choices=["auto", "online", "offline"], default="auto",
                   help="online: official slim image + PyTorch index; offline: Debian bootstrap "
                        "+ local wheelhouse; auto: offline when no registry answers")
    s.add_argument("--runner-only", action="store_true")
    s.set_defaults(fn=operations.cmd_images)

    s = sub.add_parser("runner", help="build the runner venv process mode runs with (torch 2.13.0 CPU)")
    s.add_argument("action", choices=["build"])
    s.add_argument("--force", action="store_true", help="rebuild even if current")
    s.add_argument("--python", help="base interpreter (default: /usr/bin/python3 when it is this "
                                    "Python's minor version)")
    s.add_argument("--pip-args", help="extra pip arguments, e.g. '--index-url "
                                      "https://download.pytorch.org/whl/cpu'")
    s.set_defaults(fn=operations.cmd_runner)

    s = sub.add_parser("reap", help="remove leftover sandbox containers and volumes")
    s.add_argument("--owner", help="only this owner's (default: all sandbox-env containers)")
    s.set_defaults(fn=operations.cmd_reap)

    s = sub.add_parser("doctor", help="check the Docker engine, images, limits and a smoke run")
    s.set_defaults(fn=operations.cmd_doctor)
    _evidence_commands(sub)


def _evidence_commands(sub: Sub) -> None:
    s = sub.add_parser("certify", help="run each unfixed repo and its reference fix K times")
    s.add_argument("tasks", nargs="*", help="task ids or family@N variants (default: every task)")
    s.add_argument("--variants", metavar="INDICES",
                   help="certify these variants of each named family (or of every family): "
                        "'all' (1..count-1), '1-7' or '1,3,6'; variant 0 is the task itself")
    s.add_argument("--record-certified", action="store_true",
                   help="add each certified variant (>= 1) to task_repos/<family>/variants_certified.toml "
                        "and keep its unfixed run's last lines for its incident report (variants/logs/N.log)")
    s.add_argument("--runs", type=int, default=5)
    s.add_argument("--mode", choices=mode_choices(real=True, auto=False), default="docker")
    s.add_argument("--out", help="the table (default: docs/certification.md; with variants "
                                 "docs/certification-variants.md)")
    s.set_defaults(fn=operations.cmd_certify)

    s = sub.add_parser("fidelity", help="mock vs docker verdicts over every labelled state, "
                                        "leave-one-out")
    s.add_argument("tasks", nargs="*")
    s.add_argument("--out", default="docs/fidelity.md")
    s.add_argument("--target", type=float, default=0.98)
    s.set_defaults(fn=operations.cmd_fidelity)

    s = sub.add_parser("heldout", help="score the real checks and the mock on held-out patches "
                       "(task_repos/*/heldout: written by another hand, never used for tuning)")
    s.add_argument("--mode", choices=[*mode_choices(real=True, auto=False), "none"], default="docker",
                   help="the real backend (none: the mock only)")
    s.add_argument("--tasks", nargs="*")
    s.add_argument("--workers", type=int, default=1)
    s.add_argument("--batch", default="heldout", help="the batch folder (heldout, heldout2, ...)")
    s.add_argument("--labels", nargs="+", choices=["correct", "wrong", "cheat"],
                   help="only the patches with these labels (default: all)")
    s.add_argument("--json-out", default="docs/heldout.json", help="the real verdicts, saved")
    s.add_argument("--out", help="also write the report to this file (default: print it only; "
                   "docs/heldout.md is a curated write-up, not a run's output)")
    s.add_argument("--from-json", action="store_true",
                   help="reuse the saved real verdicts; only the mock is judged again")
    s.set_defaults(fn=operations.cmd_heldout)


def _agent_command(sub: Sub) -> None:
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
    s.set_defaults(fn=evaluation.cmd_agent)


def _eval_commands(sub: Sub) -> None:
    s = sub.add_parser("eval", help="run an agent over tasks x seeds in parallel, resumably, into --out "
                                    "(episodes.jsonl, summary.json)")
    s.add_argument("--agent", default="oracle", help="oracle | random | llm | replay:FILE "
                                                     "(FILE: an episodes.jsonl or its directory)")
    s.add_argument("--label", help="the agent's name in the records (default: oracle, random, llm:MODEL, "
                                   "replay:AGENT)")
    s.add_argument("--tasks", help="comma-separated task ids (family@N for a variant) or 'all' "
                                   "(default: all; replay: the recorded ones)")
    s.add_argument("--split", choices=["train", "test", "all"],
                   help="play every variant of the selected families in this split (family@N, "
                        "task_repos/<family>/variants.toml); default: the tasks as named, variant 0. "
                        "Variants >= 1 must be certified (or SANDBOX_ENV_ALLOW_UNCERTIFIED=1)")
    s.add_argument("--seeds", help="comma-separated seeds, e.g. 0,1,2 (default: 0; replay: the "
                                   "recorded ones)")
    s.add_argument("--episodes", type=int, help="N episodes per task: seeds 0..N-1")
    s.add_argument("--concurrency", type=int, default=4, help="episodes at once (docker: capped at the CPU "
                                                              "count unless --force-concurrency)")
    s.add_argument("--force-concurrency", action="store_true")
    s.add_argument("--infra-retries", type=int, default=1,
                   help="play an episode again after an infra or env error, up to N times (default 1)")
    s.add_argument("--mode", choices=mode_choices(untrusted=True), default="auto", help=auto_help())
    s.add_argument("--out", required=True, help="output directory; rerunning with it resumes")
    s.add_argument("--no-progress", action="store_true", help="one line per episode instead of the live "
                                                              "display (automatic when stdout is no TTY)")
    s.add_argument("--owner", help="label of the containers (docker; default eval-PID-RANDOM)")
    s.add_argument("--ray", metavar="ADDRESS", help="run --mode on the nodes of this Ray cluster "
                                                    "(docs/scale-out.md)")
    s.add_argument("--replay-agent", help="replay: which agent's episodes when FILE holds several")
    s.add_argument("--model", help="llm: model name (default: $MODEL_NAME or Qwen/Qwen2.5-72B-Instruct)")
    s.add_argument("--api-base-url", help="llm: model endpoint (default: $API_BASE_URL); key: $HF_TOKEN "
                                          "or $OPENAI_API_KEY")
    s.add_argument("--temperature", type=float, help="llm: sampling temperature (default 0)")
    s.add_argument("--max-tokens", type=int, help="llm: tokens per reply (default 2048)")
    s.add_argument("--max-retries", type=int, help="llm: retries of a model call (default 3)")
    s.add_argument("--request-timeout", type=float, help="llm: seconds per model request (default 120)")
    s.set_defaults(fn=evaluation.cmd_eval)

    s = sub.add_parser("report", help="render an eval directory: report.html (self-contained, plots "
                                      "inline), report.md, trajectories/*.html")
    s.add_argument("dir")
    s.add_argument("--title")
    s.set_defaults(fn=evaluation.cmd_report)


def _record_command(sub: Sub) -> None:
    s = sub.add_parser("record", help="record real traces of every labelled state for mock mode")
    s.add_argument("tasks", nargs="*")
    s.add_argument("--mode", choices=mode_choices(real=True, auto=False), default="docker")
    s.add_argument("--compare", action="store_true",
                   help="record into a scratch dir and compare with the committed traces")
    s.add_argument("--missing", action="store_true",
                   help="record only the states with no trace of their current files (new or edited)")
    s.add_argument("--stale", action="store_true",
                   help="record the states --missing names and those whose trace another check judged")
    s.add_argument("--reverify", action="store_true",
                   help="verify again the states another check judged, keeping their recorded runs "
                        "(they do not depend on the checks); report each verdict that changed")
    s.add_argument("--behaviours", action="store_true",
                   help="one state per behaviour (a variant's recordings: family@N; the mock replays the "
                        "variant's own run of the behaviour its classifier names)")
    s.set_defaults(fn=operations.cmd_record)


def _runtime_flag(sub: Sub) -> None:
    for name, s in sub.choices.items():  # every command that builds a sandbox takes the runtime
        if name == "doctor" or any("--mode" in a.option_strings for a in s._actions):
            s.add_argument("--runtime", choices=RUNTIMES,
                           help=f"docker mode: OCI runtime of the sandbox containers (default: "
                                f"${RUNTIME_ENV} or runc; runsc = gVisor, see scripts/runsc.sh)")
