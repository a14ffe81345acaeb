"""What the stdio scenarios (`fresh_stdio.py`, `agent_scenario.py`) share: checks that print
`PASS`/`FAIL` lines and a summary, starting `linkly mcp` as an MCP client does, and tool
calls answered as parsed JSON. Driven by the official MCP Python SDK."""

from __future__ import annotations

import json
import os
import sys
from contextlib import AsyncExitStack

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

results: list[tuple[bool, str]] = []


def check(ok: bool, what: str) -> bool:
    ok = bool(ok)
    results.append((ok, what))
    print(("PASS " if ok else "FAIL ") + what, flush=True)
    return ok


def finish() -> None:
    """Prints `N passed, M failed` and exits 1 on a failure."""
    passed = sum(ok for ok, _ in results)
    failed = len(results) - passed
    print(f"{passed} passed, {failed} failed", flush=True)
    sys.exit(1 if failed else 0)


async def spawn(stack: AsyncExitStack, bin: str, home: str, **env: str) -> ClientSession:
    """Starts `linkly mcp` as a client does; the session is not initialised yet."""
    params = StdioServerParameters(
        command=bin,
        args=["mcp"],
        env={"LINKLY_HOME": home, "PATH": os.environ.get("PATH", "/usr/bin:/bin"), **env},
    )
    read, write = (await stack.enter_async_context(stdio_client(params)))[:2]
    return await stack.enter_async_context(ClientSession(read, write))


async def call(session: ClientSession, tool: str, **args) -> tuple[bool, dict | str]:
    """Calls a tool (in JSON where it has a format); returns (is_error, parsed answer)."""
    if tool != "note_save":  # note_save answers JSON and has no output_format
        args.setdefault("output_format", "json")
    res = await session.call_tool(tool, args)
    text = "".join(getattr(c, "text", "") for c in res.content)
    try:
        body = json.loads(text)
    except ValueError:
        body = text
    is_error = getattr(res, "is_error", None)
    if is_error is None:  # SDK 1.x
        is_error = getattr(res, "isError", False)
    return bool(is_error), body
