"""An agent's session through `linkly mcp` over stdio, as MCP clients start it.

Driven by the official MCP Python SDK, every step once, no retries:
search → read exactly the snippet's lines → grep a word with a ligature in a PDF and read the
line it names → save a note → read it → edit it from what `read` returned → find it by tag.

Usage: agent_scenario.py LINKLY_BIN LINKLY_HOME
Prints one line per check (`PASS`/`FAIL`), then `N passed, M failed`; exit 1 on a failure.
"""

from __future__ import annotations

import json
import re
import sys
from contextlib import AsyncExitStack

import anyio

from stdio_session import call, check, finish, spawn

BIN, HOME = sys.argv[1], sys.argv[2]
PDF = "pdfjs-freeculture-p185-186.pdf"


async def main() -> None:
    async with AsyncExitStack() as stack:
        # The shared server it starts goes away soon after the test.
        s = await spawn(stack, BIN, HOME, LINKLY_MCP_IDLE_SECS="10")
        await s.initialize()

        # 1. search: the hit says where it is.
        err, found = await call(s, "search", query="threat quantified", limit=5)
        hit = next(
            (r for r in (found.get("results", []) if not err else []) if r["path"].endswith(PDF)),
            None,
        )
        if not check(hit is not None, f"search finds the PDF ({found if hit is None else ''})"):
            return
        lo, hi = hit.get("snippet_from"), hit.get("snippet_to")
        check(
            hit.get("snippet_kind") == "text" and isinstance(lo, int) and isinstance(hi, int),
            f"the snippet is a text passage with its line range (L{lo}-{hi})",
        )
        check(
            any("quantified" in t.lower() for t in hit.get("matched_terms", [])),
            f"matched_terms name the word as written ({hit.get('matched_terms')})",
        )

        # 2. read exactly the snippet's lines.
        err, shown = await call(s, "read", doc_id=hit["doc_id"], offset=lo, limit=hi - lo + 1)
        check(
            not err and shown["shown_from"] == lo and "quantified" in shown["content"].lower(),
            "read of exactly the snippet's lines shows the matched word",
        )

        # 3. grep the ligature word (ﬁ in the PDF), then read the line grep names.
        err, g = await call(s, "grep", doc_id=hit["doc_id"], pattern="quantified")
        line = g["matches"][0]["line_number"] if not err and g.get("matches") else None
        check(line is not None, f"grep finds 'quantified' in the PDF (line {line})")
        if line is not None:
            err, one = await call(s, "read", doc_id=hit["doc_id"], offset=line, limit=1)
            check(
                not err and "quantified" in one["content"],
                "read of the line grep named shows the word",
            )

        # 3b. a legacy Japanese table (CP932, mostly half-width kana) is found by kanji and by
        # kana; a Japanese page's keywords are words, not bigram fragments.
        for q in ("札幌市中央区", "ｻｯﾎﾟﾛｼﾁｭｳｵｳｸ"):
            err, f = await call(s, "search", query=q)
            paths = [r["path"] for r in f.get("results", [])] if not err else []
            check(
                any(p.endswith("ken-all-cp932.csv") for p in paths),
                f"search {q} finds the CP932 postal-code table ({paths})",
            )
        err, f = await call(s, "search", query="コンポーネント")
        ja = next((r for r in (f.get("results", []) if not err else []) if r["path"].endswith(".md")), None)
        kws = ja.get("keywords", []) if ja else []
        check(
            "コンポーネント" in kws and not {"ント", "コン", "ポー"} & set(kws),
            f"Japanese keywords are words ({kws})",
        )

        # 4. save a note with a tag.
        err, saved = await call(
            s,
            "note_save",
            mode="create",
            content="Herons nest by the river.\n\nCounted 12 pairs today.\n",
            tags=["wildlife"],
            app_name="agent-scenario",
        )
        if not check(not err and saved.get("doc_id"), f"note_save creates the note ({saved})"):
            return

        # 5. read it: the body, with its note id and version as metadata.
        err, note = await call(s, "read", doc_id=saved["doc_id"])
        info = note.get("note") if not err else None
        check(
            bool(info) and info["note_id"] == saved["note_id"] and info["version"],
            f"read of a note gives its note_id and version ({info})",
        )
        body = note.get("content", "") if not err else ""
        check(
            body.strip() == saved["content"].strip() and "note_id:" not in body,
            "read shows the body note_save accepts, not the front matter",
        )

        # 6. edit from what read returned.
        edited = body.replace("12 pairs", "14 pairs")
        err, after = await call(
            s,
            "note_save",
            mode="edit",
            note_id=info["note_id"] if info else "",
            base_version=info["version"] if info else "",
            content=edited,
        )
        check(
            not err and after.get("version") not in (None, info and info["version"]),
            f"note_save edit from the read body succeeds ({after if err else 'new version'})",
        )

        # 7. search it by tag: the edit is there, the plumbing is not.
        err, by_tag = await call(s, "search", query="herons", scope="notes", tags=["wildlife"])
        notes = by_tag.get("results", []) if not err else []
        check(
            len(notes) == 1 and "14" in json.dumps(notes[0]),
            f"search scope=notes by tag finds the edited note ({len(notes)} result)",
        )
        if notes:
            kws = notes[0].get("keywords", [])
            check(
                not any(re.search(r"\d", k) for k in kws),
                f"its keywords hold no timestamp fragments ({kws})",
            )

    finish()


anyio.run(main)
