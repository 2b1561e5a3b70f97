"""Plays one episode with OpenEnv's own ``MCPToolClient`` (openenv 0.10.x or openenv-core 0.3.x).

Usage: ``python openenv_episode.py URL MODE TASK < actions.json``. MODE ``ws``: tools over the
WebSocket as steps; ``production``: tools over HTTP ``/mcp`` with the client's OpenEnv session
(openenv 0.10 attaches its WebSocket to that session; openenv-core 0.3 does not, so there the
episode is (re)started with the ``start_episode`` tool). Prints a JSON report: the reset's
episode id, the tool names, and each call's result (file contents replaced by their sha256).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from openenv.core.mcp_client import MCPToolClient


def line() -> str:
    for dist in ("openenv", "openenv-core"):
        try:
            return f"{dist}=={version(dist)}"
        except PackageNotFoundError:
            continue
    return "unknown"


def digest(result: Any) -> Any:
    if isinstance(result, dict) and isinstance(result.get("structuredContent"), dict):
        obs = result["structuredContent"].get("observation") or {}
        obs["current_files"] = {name: hashlib.sha256(text.encode()).hexdigest()
                                for name, text in (obs.get("current_files") or {}).items()}
    return result


async def play(url: str, mode: str, task: str, actions: list[dict[str, Any]]) -> dict[str, Any]:
    env = MCPToolClient(base_url=url)
    env.use_production_mode = mode == "production"
    report: dict[str, Any] = {"line": line(), "mode": mode, "calls": []}
    async with env:
        reset = await env.reset(task=task)
        report["reset_episode_id"] = getattr(reset.observation, "episode_id", None)
        report["tools"] = [t.name for t in await env.list_tools()]
        if mode == "production" and line().startswith("openenv-core"):
            report["calls"].append(digest(await env.call_tool("start_episode", task=task)))
        for action in [{"action_type": "read_file", "filename": "train.py"}, *actions]:
            args = {k: v for k, v in action.items() if k != "action_type"}
            try:
                report["calls"].append(digest(await env.call_tool(action["action_type"], **args)))
            except RuntimeError as exc:
                report["calls"].append({"raised": str(exc)})
        state = await env.state()
        report["state_episode_id"] = state.episode_id
    return report


if __name__ == "__main__":
    url, mode, task = sys.argv[1:4]
    print(json.dumps(asyncio.run(play(url, mode, task, json.load(sys.stdin)))))
