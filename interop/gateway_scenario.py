"""Linkly Cloud, self-hosted, end to end on the official MCP Python SDK (run by
`linkly-cli/tests/gateway.rs`).

Modes:
  http   BIN GATEWAY_HOME URL BOB_TOKEN OWNER
         As bob over Streamable HTTP: the catalogue, the link rules (linked, already_linked,
         invite_required, an invitation by the CLI, slot_exhausted, unlink, relink), search and
         read inside a linked library, a private library invisible, wrong and missing tokens
         refused. The owner published `<slug>` libraries public-docs, showcase-docs, private-docs.
  remote BIN LOCAL_HOME URL TOKEN OWNER
         `linkly mcp --remote URL --token T` over stdio: eleven tools, local search and read,
         library_search, cloud search and read, list_libraries with both.
  link-search URL TOKEN LIBRARY QUERY
         Links LIBRARY and searches QUERY in it (the PostgreSQL check: another process
         published it).

Prints one line per check (`PASS`/`FAIL`), then `N passed, M failed`; exit 1 on a failure.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from contextlib import AsyncExitStack
from typing import Any

import anyio
import httpx2
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from checks import check, finish, tool_answer


async def call(session: ClientSession, tool: str, json_format: bool = True, **args: Any) -> tuple[bool, Any, str]:
    """Calls a tool; returns (is_error, parsed JSON or None, text)."""
    if json_format:
        args.setdefault("output_format", "json")
    return await tool_answer(session, tool, args)


def addresses(body: Any) -> list[str]:
    """Every `cloud://owner/slug` library address in an answer."""
    found: list[str] = []

    def walk(v: Any) -> None:
        if isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
        elif isinstance(v, str) and v.startswith("cloud://") and v.count("/") == 3:
            if v not in found:
                found.append(v)

    walk(body)
    return found


def status_of(text: str) -> str:
    """The outcome of library_link, as its answer names it (a JSON `status`, else the text)."""
    try:
        body = json.loads(text)
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("status"), str):
        return body["status"]
    t = text.lower()
    for s in ("already_unlinked", "already_linked", "invite_required", "slot_exhausted", "not_found", "unlinked"):
        if s in t or s.replace("_", " ") in t:
            return s
    if "linked" in t:
        return "linked"
    return "?"


async def link(s: ClientSession, library: str, action: str | None = None) -> str:
    args: dict[str, Any] = {"library": library}
    if action:
        args["action"] = action
    _, _, text = await call(s, "library_link", **args)
    return status_of(text)


async def search_read(s: ClientSession, library: str | None, query: str, word: str, prefix: str, what: str) -> None:
    args: dict[str, Any] = {"query": query}
    if library:
        args["library"] = library
    err, body, text = await call(s, "search", **args)
    hits = (body or {}).get("results", []) if not err else []
    hit = next((r for r in hits if str(r.get("doc_id", "")).startswith(prefix)), None)
    if not check(hit is not None, f"{what}: search {query!r} finds a document with a {prefix}… id ({text[:300]})"):
        return
    err, body, text = await call(s, "read", doc_id=hit["doc_id"])
    check(
        not err and word in (body or {}).get("content", ""),
        f"{what}: read {hit['doc_id']} shows {word!r} ({text[:200]})",
    )


async def http_session(stack: AsyncExitStack, url: str, token: str) -> ClientSession:
    """An initialised session over Streamable HTTP with `token` as the bearer."""
    http = await stack.enter_async_context(
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(60.0, read=300.0))
    )
    read, write = (await stack.enter_async_context(streamable_http_client(url, http_client=http)))[:2]
    s = await stack.enter_async_context(ClientSession(read, write))
    await s.initialize()
    return s


async def http_mode(bin: str, gw_home: str, url: str, token: str, owner: str) -> None:
    public, showcase, private = (f"cloud://{owner}/{s}" for s in ("public-docs", "showcase-docs", "private-docs"))
    async with AsyncExitStack() as stack:
        s = await http_session(stack, url, token)

        tools = {t.name for t in (await s.list_tools()).tools}
        check({"library_search", "library_link", "search", "read"} <= tools, f"the gateway lists its tools ({sorted(tools)})")

        err, body, text = await call(s, "library_search")
        found = addresses(body)
        check(not err and public in found and showcase in found, f"library_search lists the public and showcase libraries ({found})")
        check(private not in found, "library_search does not list another user's private library")

        check(await link(s, public) == "linked", "link the public library: linked")
        check(await link(s, public) == "already_linked", "link it again: already_linked")
        await search_read(s, public, "quasar", "quasar", public + "/", "linked public library")

        check(await link(s, showcase) == "invite_required", "link the showcase library uninvited: invite_required")
        done = subprocess.run(
            [bin, "--home", gw_home, "gateway", "invite", showcase, "bob"], capture_output=True, text=True
        )
        check(done.returncode == 0, f"the owner invites bob with `linkly gateway invite` ({done.stderr.strip()})")
        check(await link(s, showcase) == "slot_exhausted", "link it invited with the free slot taken: slot_exhausted")
        check(await link(s, public, "unlink") == "unlinked", "unlink the public library: unlinked")
        check(await link(s, showcase) == "linked", "then link the showcase library: linked")
        await search_read(s, showcase, "zeppelin", "zeppelin", showcase + "/", "linked showcase library")
        check(await link(s, showcase, "unlink") == "unlinked", "unlink the showcase library")
        check(await link(s, public) == "linked", "relink the public library: linked")

        check(await link(s, private) == "not_found", "link another user's private library: not_found")
        err, body, text = await call(s, "search", query="obsidian", library=private)
        check(err or not (body or {}).get("results"), "searching the private library shows nothing")

    # Wrong and missing tokens are refused before MCP.
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    async with httpx2.AsyncClient(timeout=30.0) as raw:
        r = await raw.post(url, json=init, headers={**headers, "Authorization": "Bearer lk_wrong"})
        check(r.status_code == 401, f"a wrong token is refused with 401 ({r.status_code})")
        r = await raw.post(url, json=init, headers=headers)
        check(r.status_code == 401, f"a missing token is refused with 401 ({r.status_code})")
    refused = False
    try:
        async with AsyncExitStack() as stack:
            http = await stack.enter_async_context(
                httpx2.AsyncClient(headers={"Authorization": "Bearer lk_wrong"}, timeout=httpx2.Timeout(20.0))
            )
            read, write = (await stack.enter_async_context(streamable_http_client(url, http_client=http)))[:2]
            s = await stack.enter_async_context(ClientSession(read, write))
            with anyio.fail_after(20):
                await s.initialize()
    except BaseException:  # the SDK raises (an HTTP status error inside a task group)
        refused = True
    check(refused, "the SDK cannot open a session with a wrong token")


async def remote_mode(bin: str, home: str, url: str, token: str, owner: str) -> None:
    public = f"cloud://{owner}/public-docs"
    async with AsyncExitStack() as stack:
        params = StdioServerParameters(
            command=bin,
            args=["mcp", "--remote", url, "--token", token],
            env={"LINKLY_HOME": home, "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        )
        read, write = (await stack.enter_async_context(stdio_client(params)))[:2]
        s = await stack.enter_async_context(ClientSession(read, write))
        await s.initialize()
        tools = sorted(t.name for t in (await s.list_tools()).tools)
        check(len(tools) == 11 and "library_search" in tools and "library_link" in tools, f"eleven tools ({tools})")

        await search_read(s, None, "meridian", "meridian", "local://", "local library")
        err, body, text = await call(s, "library_search")
        check(not err and public in addresses(body), f"library_search through the router ({addresses(body)})")
        status = await link(s, public)
        check(status in ("linked", "already_linked"), f"library_link through the router ({status})")
        await search_read(s, public, "quasar", "quasar", public + "/", "cloud library through the router")

        # list_libraries answers Markdown (it has no parameters): the local section, then the cloud one.
        err, _, text = await call(s, "list_libraries", json_format=False)
        local_at, cloud_at = text.find("local://"), text.find(public)
        check(
            not err and 0 <= local_at < cloud_at,
            f"list_libraries shows the local library, then the linked cloud one ({text[:600]})",
        )


async def link_search_mode(url: str, token: str, library: str, query: str) -> None:
    async with AsyncExitStack() as stack:
        s = await http_session(stack, url, token)
        status = await link(s, library)
        check(status in ("linked", "already_linked"), f"link {library} ({status})")
        await search_read(s, library, query, query, library + "/", "a library published through the other process")


def main() -> None:
    mode, rest = sys.argv[1], sys.argv[2:]
    if mode == "http":
        anyio.run(http_mode, *rest)
    elif mode == "remote":
        anyio.run(remote_mode, *rest)
    elif mode == "link-search":
        anyio.run(link_search_mode, *rest)
    else:
        raise SystemExit(f"unknown mode {mode}")
    finish()


if __name__ == "__main__":
    main()
