"""Drive the TRL adapter without TRL: the calls GRPOTrainer would make, with a scripted policy.

Shows what a model would see: the tools TRL discovers (public methods, first docstring line and
arguments), the text ``reset()`` appends to the prompt, each tool call and its result, and what
``reward_fn`` returns. Policies: ``oracle`` (the reference fix, through the tools) and ``no-fix``
(submits at once).

    python examples/trl_rollout_smoke.py                          # every task, in process, mock mode
    python examples/trl_rollout_smoke.py oom_graph_leak --policy no-fix
    SANDBOX_ENV_URL=http://127.0.0.1:8000 python examples/trl_rollout_smoke.py   # against a server
"""

from __future__ import annotations

import argparse
import inspect
from typing import Any

from sandbox_env.suite.oracle import oracle_actions
from sandbox_env.suite.tasks import TaskRegistry
from sandbox_env.trl import TriageToolEnv, reward_fn


def clip(text: str, width: int) -> str:
    lines = text.splitlines()
    if len(lines) <= width:
        return text
    skipped = f"    ... ({len(lines) - width} lines) ..."
    return "\n".join([*lines[: width // 2], skipped, *lines[-width // 2:]])


def tools(env: TriageToolEnv) -> dict[str, Any]:
    """The methods TRL exposes as tools (public, bound, not reset/get_reward)."""
    return {n: m for n, m in inspect.getmembers(env, predicate=inspect.ismethod)
            if not n.startswith("_") and n not in ("reset", "get_reward")}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("tasks", nargs="*", help="task ids (default: all)")
    p.add_argument("--policy", choices=("oracle", "no-fix"), default="oracle")
    p.add_argument("--lines", type=int, default=12, help="lines shown per tool result")
    args = p.parse_args()

    registry = TaskRegistry()
    probe = TriageToolEnv()
    print("tools:")
    for name, method in tools(probe).items():
        params = ", ".join(str(v) for v in inspect.signature(method).parameters.values())
        print(f"  {name}({params}): {inspect.getdoc(method).splitlines()[0]}")

    envs = []
    for task_id in args.tasks or registry.ids():
        task = registry.get(task_id)
        env = TriageToolEnv()
        envs.append(env)
        print(f"\n{'=' * 30} {task_id} ({args.policy})")
        print(clip(env.reset(task=task_id, prompt="(dataset prompt, ignored)"), args.lines))
        script = (oracle_actions(task) if args.policy == "oracle" else
                  [{"action_type": "submit_fix", "explanation": "Restarted the job; it should pass now."}])
        for action in script:
            name = action.pop("action_type")
            shown = ", ".join(f"{k}={v[:40]!r}" for k, v in action.items() if isinstance(v, str))
            print(f"\n>>> {name}({shown})")
            print(clip(tools(env)[name](**action), args.lines))
        print(f"\ndone={env.done} reward={env.reward:.3f} shaped_reward={env.shaped_reward:.3f}")
    print(f"\nreward_fn(environments) -> {[round(r, 3) for r in reward_fn(envs)]}")
    for env in envs:
        env._close()


if __name__ == "__main__":
    main()
