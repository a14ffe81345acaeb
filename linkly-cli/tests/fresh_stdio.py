"""Freshness through `linkly mcp` over stdio, as MCP clients start it (no `linkly serve`).

Driven by the official MCP Python SDK. Two clients on one data directory, then: create,
modify and delete files and see each change in `search` within a deadline; read a modified
file at once and get the new text; save a note and find it by its tag in the next call.

Usage: fresh_stdio.py LINKLY_BIN LINKLY_HOME DOCS_DIR
Prints one line per check (`PASS`/`FAIL`), then `N passed, M failed`; exit 1 on a failure.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from contextlib import AsyncExitStack

import anyio
from mcp import ClientSession

import stdio_session
from stdio_session import call, check, finish

DEADLINE = 2.0  # seconds from a change on disk to the answer that shows it

BIN, HOME, DOCS = sys.argv[1], sys.argv[2], sys.argv[3]


async def spawn(stack: AsyncExitStack) -> ClientSession:
    return await stdio_session.spawn(stack, BIN, HOME)


async def search_ids(session: ClientSession, query: str, **args) -> list[str]:
    err, body = await call(session, "search", query=query, **args)
    if err or not isinstance(body, dict):
        return []
    return [r["path"] for r in body.get("results", [])]


async def until(predicate, deadline: float = DEADLINE) -> float | None:
    """Seconds until `predicate()` holds, or None when it never did within the deadline."""
    start = time.monotonic()
    while True:
        if await predicate():
            return time.monotonic() - start
        if time.monotonic() - start > deadline:
            return None
        await anyio.sleep(0.05)


async def main() -> None:
    async with AsyncExitStack() as stack:
        # Two clients started at once (a desktop app and a coding agent): both processes run
        # before either session is initialised, and both initialise concurrently.
        a = await spawn(stack)
        b = await spawn(stack)
        async with anyio.create_task_group() as tg:
            tg.start_soon(a.initialize)
            tg.start_soon(b.initialize)
        # Both clients answer; the first reconcile found the existing file.
        first = await until(lambda: _has(a, "aardvark", "start.md"), deadline=20)
        check(first is not None, "client A finds the file that was there at start")
        check(await _has(b, "aardvark", "start.md"), "client B answers from the same index")

        # Create.
        new = os.path.join(DOCS, "new.md")
        with open(new, "w") as f:
            f.write("# New\n\nThe quokka is a small marsupial.\n")
        t = await until(lambda: _has(a, "quokka", "new.md"))
        check(t is not None, f"a created file is searchable within {DEADLINE}s ({t and round(t, 3)}s)")
        check(await _has(b, "quokka", "new.md"), "the other client sees the new file too")
        err, found = await call(a, "search", query="quokka")
        doc_id = found["results"][0]["doc_id"] if not err and found["results"] else None
        check(
            bool(doc_id) and "indexed_at" in found["results"][0],
            "search results carry indexed_at",
        )

        # Modify, then read at once: the new text, never the old one.
        with open(new, "w") as f:
            f.write("# New\n\nThe wombat digs burrows.\nA second line.\n")
        err, body = await call(b, "read", doc_id=doc_id)
        text = json.dumps(body)
        check(not err and "wombat" in text and "quokka" not in text, "read right after an edit shows the new text")
        t = await until(lambda: _has(a, "wombat", "new.md"))
        check(t is not None, f"the edit is searchable within {DEADLINE}s ({t and round(t, 3)}s)")
        check(not await _has(a, "quokka", "new.md"), "the old text is no longer found")

        # Delete.
        os.remove(new)
        t = await until(lambda: _gone(a, "wombat", "new.md"))
        check(t is not None, f"a deleted file leaves search within {DEADLINE}s ({t and round(t, 3)}s)")
        err, body = await call(b, "read", doc_id=doc_id)
        check(err and "DOC_NOT_FOUND" in json.dumps(body), "reading the deleted file says DOC_NOT_FOUND")

        # note_save answers once the note is indexed: its tag finds it in the next call.
        err, saved = await call(
            a, "note_save", mode="create", content="Pelican sightings by the pier #birdwatch\n"
        )
        check(not err and bool(saved.get("doc_id")), f"note_save returns the note's doc_id ({saved})")
        found = await search_ids(b, "pelican", scope="notes", tags=["birdwatch"])
        check(len(found) == 1, "search scope=notes with the note's tag finds it in the next call")
        err, listed = await call(b, "list", scope="notes")
        items = listed.get("items", []) if isinstance(listed, dict) else []
        check(
            any(i.get("doc_id") == saved.get("doc_id") and i.get("indexed") for i in items),
            "list scope=notes shows the note as indexed",
        )
        err, explored = await call(a, "explore")
        fresh = explored.get("freshness", {}) if isinstance(explored, dict) else {}
        check(fresh.get("watching") is True and fresh.get("last_reconcile"), f"explore reports freshness ({fresh})")

        # Kill the shared server: the clients start a new one on their next call, and the
        # index it reopens is whole.
        with open(os.path.join(HOME, "port")) as f:
            pid = json.load(f)["pid"]
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            await anyio.sleep(0.05)
        check(await _has(a, "aardvark", "start.md"), "after the server was killed, the next call is answered")
        check(await _has(b, "pelican", "Pelican sightings by the pier.md"), "the other client reconnects too, to the same index")
        with open(os.path.join(DOCS, "late.md"), "w") as f:
            f.write("Ocelots at dusk.\n")
        t = await until(lambda: _has(b, "ocelots", "late.md"))
        check(t is not None, f"the new server watches again ({t and round(t, 3)}s)")

    finish()


async def _has(session: ClientSession, query: str, name: str) -> bool:
    return any(p.endswith("/" + name) for p in await search_ids(session, query))


async def _gone(session: ClientSession, query: str, name: str) -> bool:
    return not await _has(session, query, name)


anyio.run(main)
