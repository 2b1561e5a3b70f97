"""Plays MCP sessions over streamable HTTP with the official `mcp` client of the venv running it.

mcp 2.x: ``mcp.Client(url)``; mcp 1.x: ``ClientSession`` over ``streamablehttp_client``. No
custom headers. Usage: ``python mcp_episodes.py URL < plan.json``; the plan is a list of
sessions, each a list of ``{"tool", "args"}`` calls; all sessions run at once, their calls
interleaved. Prints a JSON report: per session, the tool names and every call's result (file
contents replaced by their sha256).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
from contextlib import AsyncExitStack
from importlib.metadata import version
from typing import Any

MCP_MAJOR = int(version("mcp").split(".")[0])


async def open_session(stack: AsyncExitStack, url: str) -> Any:
    """A connected, initialized session object with list_tools() and call_tool(name, args)."""
    if MCP_MAJOR >= 2:
        from mcp import Client

        return await stack.enter_async_context(Client(url))
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    read, write, _ = await stack.enter_async_context(streamablehttp_client(url))
    session = await stack.enter_async_context(ClientSession(read, write))
    await session.initialize()
    return session


def digest(result: Any) -> dict[str, Any]:
    structured = getattr(result, "structured_content", None) or getattr(result, "structuredContent", None)
    is_error = getattr(result, "is_error", None) or getattr(result, "isError", None)
    if structured and isinstance(structured.get("observation"), dict):
        obs = structured["observation"]
        obs["current_files"] = {name: hashlib.sha256(text.encode()).hexdigest()
                                for name, text in (obs.get("current_files") or {}).items()}
    text = "".join(getattr(block, "text", "") for block in result.content)
    return {"isError": bool(is_error), "text": text[:4000], "structured": structured}


async def play(url: str, plan: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    async with AsyncExitStack() as stack:
        sessions = [await open_session(stack, url) for _ in plan]
        reports: list[dict[str, Any]] = []
        for s in sessions:
            tools = await s.list_tools()
            reports.append({"tools": [t.name for t in tools.tools], "calls": []})
        for i in range(max(len(calls) for calls in plan)):
            batch = [(n, calls[i]) for n, calls in enumerate(plan) if i < len(calls)]
            results = await asyncio.gather(*(sessions[n].call_tool(c["tool"], c.get("args") or {})
                                             for n, c in batch))
            for (n, _), result in zip(batch, results, strict=True):
                reports[n]["calls"].append(digest(result))
    return reports


if __name__ == "__main__":
    report = asyncio.run(play(sys.argv[1].rstrip("/") + "/mcp", json.load(sys.stdin)))
    print(json.dumps({"mcp": version("mcp"), "sessions": report}))
