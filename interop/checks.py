"""What the scripted MCP scenarios share (`gateway_scenario.py` here, the stdio scenarios of
`linkly-cli/tests` through `stdio_session.py`): checks that print `PASS`/`FAIL` lines and a
summary, and a tool call's raw answer on the official MCP Python SDK, 1.x or 2.x."""

from __future__ import annotations

import json
import sys
from typing import Any

from mcp import ClientSession

results: list[tuple[bool, str]] = []


def check(ok: Any, what: str) -> bool:
    """Records and prints one check (`PASS what` or `FAIL what`); returns it."""
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


async def tool_answer(
    session: ClientSession, tool: str, args: dict[str, Any], text_if_not_json: bool = False
) -> tuple[bool, Any, str]:
    """Calls a tool; returns (is_error, its text parsed as JSON, the text). A text that is no
    JSON parses as None, or as itself with `text_if_not_json`."""
    res = await session.call_tool(tool, args)
    text = "".join(getattr(c, "text", "") for c in res.content)
    try:
        body = json.loads(text)
    except ValueError:
        body = text if text_if_not_json else None
    is_error = getattr(res, "is_error", None)
    if is_error is None:  # SDK 1.x
        is_error = getattr(res, "isError", False)
    return bool(is_error), body, text
