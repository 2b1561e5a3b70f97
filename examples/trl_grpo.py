"""GRPO training on sandbox-env debugging episodes with TRL's ``environment_factory``.

Each dataset row names a task (``task`` column); TRL builds one ``TriageToolEnv`` per rollout,
calls ``reset(**row)`` (the incident report is appended to the row's prompt), lets the model call
the five tools (read_file, edit_file, execute_bash, view_git_diff, submit_fix) until it stops,
and scores every rollout with ``reward_fn`` (the episode's terminal score). The ``num_generations``
rollouts of a row share its task, so GRPO compares attempts at the same incident.

Requirements (not dependencies of sandbox-env): the ``trl`` extra (``pip install -e ".[trl]"``: TRL
1.16.0, transformers 5.24.0, accelerate, datasets, torch 2.13.0 CPU; on a GPU machine install the
torch build for it), ``vllm`` for --use-vllm, and a model whose chat template supports tool
calling (e.g. Qwen3).

    # episodes in this process, mock mode (recorded runs; no Docker, no torch runs):
    python examples/trl_grpo.py --model Qwen/Qwen3-1.7B

    # episodes on a server, e.g. docker mode (real runs); allow one session per rollout:
    MODE=docker bash scripts/start.sh            # or: sandbox-env serve --mode docker --max-sessions 128
    python examples/trl_grpo.py --env-url http://127.0.0.1:8000 --use-vllm --vllm-mode colocate

Not run by the tests (it needs a real model); ``tests/test_trl_grpo.py`` runs the same
``GRPOTrainer(environment_factory=TriageToolEnv, reward_funcs=reward_fn)`` path for one step on CPU
with a tiny model, and ``examples/trl_rollout_smoke.py`` drives the adapter without TRL.
"""

from __future__ import annotations

import argparse
import os
import random

PROMPT = """\
You are the on-call ML infrastructure engineer. A PyTorch training job is failing; the incident \
report is below. Use the tools to reproduce the failure (execute_bash with the run command), read \
the code, fix the root cause with minimal edits (edit_file), check your change (execute_bash, \
view_git_diff), then call submit_fix with an explanation of the root cause, the mechanism and \
why the fix works. Every tool call uses one step of a small budget; submit_fix ends the episode.
"""


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description="GRPO on sandbox-env episodes (TRL environment_factory).")
    p.add_argument("--model", default="Qwen/Qwen3-1.7B", help="model id or path (tool-calling chat template)")
    p.add_argument("--env-url", default=None,
                   help="sandbox-env server URL (sets SANDBOX_ENV_URL); default: in process, mock mode")
    p.add_argument("--tasks", nargs="*", default=None, help="task ids to train on (default: all)")
    p.add_argument("--rows-per-task", type=int, default=64, help="dataset rows per task")
    p.add_argument("--num-generations", type=int, default=4, help="rollouts per row (GRPO group size)")
    p.add_argument("--max-completion-length", type=int, default=8192,
                   help="token budget of a whole episode (model turns + tool results)")
    p.add_argument("--learning-rate", type=float, default=1e-6)
    p.add_argument("--gradient-accumulation-steps", type=int, default=16)
    p.add_argument("--num-epochs", type=int, default=1)
    p.add_argument("--thinking", action="store_true", help="enable the chat template's thinking mode")
    p.add_argument("--use-vllm", action="store_true")
    p.add_argument("--vllm-mode", choices=("colocate", "server"), default="colocate")
    p.add_argument("--vllm-server-url", default="http://localhost:8001")
    p.add_argument("--report-to", default="none", help="e.g. trackio, wandb, tensorboard")
    p.add_argument("--output-dir", default=None)
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args()


def available_tasks(env_url: str | None) -> list[dict]:
    """Task ids and step budgets, from the server or from the local task registry."""
    if env_url:
        from sandbox_env.client import TriageClient

        with TriageClient(env_url) as client:
            return [{"id": t["id"], "max_steps": t["max_steps"]} for t in client.tasks()]
    from sandbox_env.suite.tasks import TaskRegistry

    return [{"id": t.id, "max_steps": t.max_steps} for t in TaskRegistry()]


def main() -> None:
    args = parse_args()
    if args.env_url:  # read by TriageToolEnv() when TRL builds its instances
        os.environ["SANDBOX_ENV_URL"] = args.env_url
    tasks = available_tasks(args.env_url)
    if args.tasks:
        unknown = set(args.tasks) - {t["id"] for t in tasks}
        if unknown:
            raise SystemExit(f"unknown task(s) {sorted(unknown)}; available: {[t['id'] for t in tasks]}")
        tasks = [t for t in tasks if t["id"] in args.tasks]

    # TRL and its dependencies are imported only here: sandbox-env does not depend on them.
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from sandbox_env.trl import TriageToolEnv, reward_fn

    rows = [{"prompt": [{"role": "user", "content": PROMPT}], "task": t["id"]}
            for t in tasks for _ in range(args.rows_per_task)]
    random.Random(args.seed).shuffle(rows)
    dataset = Dataset.from_list(rows)

    config = GRPOConfig(
        output_dir=args.output_dir or f"{args.model.split('/')[-1]}-sandbox-env-GRPO",
        learning_rate=args.learning_rate,
        num_train_epochs=args.num_epochs,
        num_generations=args.num_generations,
        gradient_accumulation_steps=args.gradient_accumulation_steps,
        max_completion_length=args.max_completion_length,
        # one tool-calling round per step of the largest budget; the episode ends there anyway
        max_tool_calling_iterations=max(t["max_steps"] for t in tasks),
        chat_template_kwargs={"enable_thinking": args.thinking},
        use_vllm=args.use_vllm,
        vllm_mode=args.vllm_mode,
        vllm_server_base_url=args.vllm_server_url if args.use_vllm and args.vllm_mode == "server" else None,
        log_completions=True,
        num_completions_to_print=1,
        logging_steps=1,
        report_to=args.report_to,
        seed=args.seed,
    )
    trainer = GRPOTrainer(
        model=args.model,
        reward_funcs=reward_fn,
        train_dataset=dataset,
        args=config,
        environment_factory=TriageToolEnv,
    )
    trainer.train()
    trainer.save_model(config.output_dir)


if __name__ == "__main__":
    main()
