"""A whole run and the entry point: wait for the server, pick the tasks, play each once, summarise;
`main` is what `sandbox-env agent` and inference.py call."""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from ..client import EnvClientError, TriageClient
from .config import AgentConfig, AgentConfigError
from .loop import run_episode
from .model_client import make_llm_client
from .report import Emit, RunSummary, emit_stdout, note, summary_lines

if TYPE_CHECKING:
    from openai import OpenAI


class EnvUnavailable(RuntimeError):
    """The environment server did not answer /health in time."""


def wait_for_env(client: TriageClient, timeout_s: float, poll_s: float = 1.0) -> dict[str, Any]:
    """Poll GET /health until it answers 200 (HF Spaces cold-start) or raise EnvUnavailable."""
    deadline = time.monotonic() + timeout_s
    last = "no answer"
    while True:
        try:
            return client.health()
        except (EnvClientError, httpx.HTTPError) as exc:
            last = f"{type(exc).__name__}: {exc}"
        if time.monotonic() >= deadline:
            raise EnvUnavailable(f"environment did not answer /health within {timeout_s:.0f}s ({last})")
        time.sleep(poll_s)


def resolve_tasks(client: TriageClient, wanted: list[str] | None) -> list[dict[str, Any]]:
    """The server's task rows, all or the wanted ones (in the order given)."""
    rows = client.tasks()
    if not wanted:
        return rows
    by_id = {r["id"]: r for r in rows}
    unknown = [t for t in wanted if t not in by_id]
    if unknown:
        raise AgentConfigError(f"unknown task(s) {', '.join(unknown)}; the server has: "
                               f"{', '.join(by_id)}")
    return [by_id[t] for t in wanted]


def run_agent(cfg: AgentConfig, emit: Emit = emit_stdout, llm: OpenAI | None = None) -> RunSummary:
    """Wait for the environment, then play every selected task once; the summary goes to stderr."""
    llm = llm or make_llm_client(cfg)
    summary = RunSummary(model=cfg.model, env_url=cfg.env_url)
    with TriageClient(cfg.env_url, timeout=cfg.env_timeout_s) as client:
        wait_for_env(client, cfg.health_timeout_s)
        for row in resolve_tasks(client, cfg.tasks):
            summary.episodes.append(run_episode(client, llm, row["id"], cfg, emit=emit,
                                                run_command=row.get("run_command")))
    for line in summary_lines(summary):
        note(line)
    return summary


def main(json_out: str | Path | None = None, environ: Mapping[str, str] | None = None,
         **overrides: Any) -> int:
    """Entry point of `sandbox-env agent` and inference.py: 0 if it ran (whatever the scores),
    2 on a configuration error, 1 when the environment never came up.

    The configuration comes from the environment variables, ``overrides`` (None: not given) win.
    """
    cfg: AgentConfig | None = None
    try:
        cfg = AgentConfig.from_env(environ, **overrides)
        cfg.require_key()
        summary = run_agent(cfg)
    except AgentConfigError as exc:
        note(f"error: {exc}")
        return 2
    except (EnvUnavailable, EnvClientError, httpx.HTTPError) as exc:
        note(f"error: environment {cfg.env_url if cfg else '?'}: {exc}")
        return 1
    if json_out:
        Path(json_out).write_text(summary.model_dump_json(indent=2) + "\n")
        note(f"[summary] written to {json_out}")
    return 0
