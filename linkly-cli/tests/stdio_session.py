"""What the stdio scenarios (`fresh_stdio.py`, `agent_scenario.py`) share: checks that print
`PASS`/`FAIL` lines and a summary, starting `linkly mcp` as an MCP client does, and tool
calls answered as parsed JSON. Driven by the official MCP Python SDK."""

from __future__ import annotations

import os
import sys
from contextlib import AsyncExitStack

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

# The checks and the raw tool call are the interop scenarios' (`interop/checks.py`).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "interop"))
from checks import check, finish, tool_answer  # noqa: E402


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
    is_error, body, _ = await tool_answer(session, tool, args, text_if_not_json=True)
    return is_error, body
