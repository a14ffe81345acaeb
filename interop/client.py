#!/usr/bin/env python3
"""Linkly's MCP interop client: the official MCP Python SDK (`mcp` on PyPI) driving a server.

It connects over stdio (`--stdio "CMD ARGS"`) or Streamable HTTP (`--http URL`), checks the
handshake, the tool list and every tool's JSON Schemas, runs a scenario of tool calls with
expectations (`--scenario FILE`; the format is in interop/README.md), pings, and checks that every
message the server sent was JSON-RPC. Each check prints one `PASS`/`FAIL`/`WARN` line; the last
line is always `N passed, M failed`. Exit status: 0 all passed, 1 a failure, 2 a usage error.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import sys
import time
from contextlib import AsyncExitStack
from typing import Any

import anyio
import httpx2
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from jsonschema.validators import validator_for
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import PaginatedRequestParams
from mcp_types import JSONRPCError, JSONRPCResponse

# ---------------------------------------------------------------------------------------------
# Reporting


class Report:
    """Counts and prints outcomes, one line each."""

    def __init__(self) -> None:
        self.passed = 0
        self.failed = 0
        self.warnings = 0

    def ok(self, label: str, detail: str = "") -> None:
        self.passed += 1
        print(f"PASS  {label}" + (f"  {detail}" if detail else ""), flush=True)

    def fail(self, label: str, reasons: list[str]) -> None:
        self.failed += 1
        print(f"FAIL  {label}", flush=True)
        for reason in reasons:
            print(f"      - {reason}", flush=True)

    def check(self, label: str, reasons: list[str], detail: str = "") -> bool:
        if reasons:
            self.fail(label, reasons)
            return False
        self.ok(label, detail)
        return True

    def warn(self, label: str, message: str) -> None:
        self.warnings += 1
        print(f"WARN  {label}: {message}", flush=True)

    def summary(self) -> None:
        if self.warnings:
            print(f"({self.warnings} warning(s))", flush=True)
        print(f"{self.passed} passed, {self.failed} failed", flush=True)


def clip(value: Any, limit: int = 400) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} chars)"


# ---------------------------------------------------------------------------------------------
# The wire: what the server sent, seen between the SDK transport and the session


class Recorder:
    """Keeps the last raw result per request and the messages that were not JSON-RPC."""

    def __init__(self) -> None:
        self.received = 0
        self.bad: list[str] = []
        self.last_result: dict[str, Any] | None = None

    def seen(self, item: Any) -> None:
        if isinstance(item, Exception):
            self.bad.append(f"{type(item).__name__}: {item}")
            return
        self.received += 1
        message = getattr(item, "message", None)
        if isinstance(message, JSONRPCResponse):
            self.last_result = message.result
        elif isinstance(message, JSONRPCError):
            self.last_result = None


class RecordingStream:
    """A read stream that shows each item to a `Recorder`, then passes it on unchanged."""

    def __init__(self, inner: Any, recorder: Recorder) -> None:
        self._inner = inner
        self._recorder = recorder

    async def receive(self) -> Any:
        item = await self._inner.receive()
        self._recorder.seen(item)
        return item

    def __aiter__(self) -> RecordingStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> RecordingStream:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._inner.__aexit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


# ---------------------------------------------------------------------------------------------
# JSON Schema checks


def schema_problems(schema: Any, what: str) -> list[str]:
    """Why `schema` is not a valid JSON Schema for an object (empty when it is)."""
    if not isinstance(schema, dict):
        return [f"{what} is not a JSON object: {clip(schema)}"]
    problems = []
    try:
        validator_for(schema, default=Draft202012Validator).check_schema(schema)
    except SchemaError as exc:
        problems.append(f"{what} is not a valid JSON Schema: {exc.message} at {list(exc.path)}")
    if schema.get("type") != "object":
        problems.append(f'{what} has type {schema.get("type")!r}, not "object"')
    return problems


def argument_errors(schema: dict[str, Any], arguments: Any) -> list[str]:
    """The ways `arguments` violate `schema`."""
    cls = validator_for(schema, default=Draft202012Validator)
    return [f"{'/'.join(map(str, e.path)) or '(root)'}: {e.message}" for e in cls(schema).iter_errors(arguments)]


# ---------------------------------------------------------------------------------------------
# Result documents, paths and expectations

_SEGMENT = re.compile(r"""\.([^.\[\]]+)|\[(-?\d+)\]|\[(\*)\]|\['([^']*)'\]|\["([^"]*)"\]""")
_MISSING = object()


def parse_path(path: str) -> list[Any]:
    """`$.a[0]['b c'][*]` → `["a", 0, "b c", "*"]`; raises ValueError on anything else."""
    if not path.startswith("$"):
        raise ValueError(f"path {path!r} does not start with $")
    segments: list[Any] = []
    pos = 1
    while pos < len(path):
        m = _SEGMENT.match(path, pos)
        if not m:
            raise ValueError(f"path {path!r}: cannot parse at {path[pos:]!r}")
        key, index, star, quoted, dquoted = m.groups()
        if index is not None:
            segments.append(int(index))
        elif star is not None:
            segments.append("*")
        else:
            segments.append(next(s for s in (key, quoted, dquoted) if s is not None))
        pos = m.end()
    return segments


def resolve(doc: Any, segments: list[Any]) -> Any:
    """The value at `segments`, `_MISSING` when absent; `*` gives the list of what each
    element yields."""
    for i, seg in enumerate(segments):
        if seg == "*":
            if not isinstance(doc, list):
                return _MISSING
            found = [resolve(item, segments[i + 1 :]) for item in doc]
            return [v for v in found if v is not _MISSING]
        if isinstance(seg, int):
            if not isinstance(doc, list) or not -len(doc) <= seg < len(doc):
                return _MISSING
            doc = doc[seg]
        else:
            if not isinstance(doc, dict) or seg not in doc:
                return _MISSING
            doc = doc[seg]
    return doc


_TYPES = {
    "string": lambda v: isinstance(v, str),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


def _has(value: Any, part: Any) -> bool:
    if isinstance(value, str):
        return isinstance(part, str) and part in value
    if isinstance(value, (list, dict)):
        return part in value
    return False


_OPS = {
    "eq": lambda v, a: v == a,
    "ne": lambda v, a: v != a,
    "gt": lambda v, a: v > a,
    "gte": lambda v, a: v >= a,
    "lt": lambda v, a: v < a,
    "lte": lambda v, a: v <= a,
    "len": lambda v, a: len(v) == a,
    "min_len": lambda v, a: len(v) >= a,
    "max_len": lambda v, a: len(v) <= a,
    "contains": _has,
    "not_contains": lambda v, a: not _has(v, a),
    "regex": lambda v, a: isinstance(v, str) and re.search(a, v) is not None,
    "type": lambda v, a: _TYPES[a](v),
    "in": lambda v, a: v in a,
    "all_contain": lambda v, a: isinstance(v, list) and all(_has(x, a) for x in v),
    "any_contain": lambda v, a: isinstance(v, list) and any(_has(x, a) for x in v),
}


def path_problems(path: str, doc: dict[str, Any], spec: Any) -> list[str]:
    """Checks one `json_paths` entry: a dict of operators, or a plain value (equality)."""
    try:
        value = resolve(doc, parse_path(path))
    except ValueError as exc:
        return [str(exc)]
    operators = isinstance(spec, dict) and spec and all(k in _OPS or k == "exists" for k in spec)
    if not operators:
        spec = {"eq": spec}
    if "exists" in spec:
        if (value is not _MISSING) != bool(spec["exists"]):
            return [f"{path}: exists is {value is not _MISSING}, expected {spec['exists']}"]
    if value is _MISSING:
        return [] if set(spec) == {"exists"} else [f"{path}: not found"]
    problems = []
    for op, arg in spec.items():
        if op == "exists":
            continue
        try:
            good = _OPS[op](value, arg)
        except (TypeError, KeyError, re.error) as exc:
            good = False
            arg = f"{arg!r} ({type(exc).__name__}: {exc})"
        if not good:
            problems.append(f"{path}: {op} {clip(arg, 200)} failed on {clip(value, 300)}")
    return problems


def text_of(raw: dict[str, Any]) -> str:
    blocks = raw.get("content") if isinstance(raw.get("content"), list) else []
    return "\n".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")


def document(raw: dict[str, Any]) -> dict[str, Any]:
    """The raw result plus `_text` (the text blocks joined) and `_json` (the first text block
    parsed as JSON, when it is JSON)."""
    doc = dict(raw)
    doc["_text"] = text_of(raw)
    first = next((b for b in raw.get("content") or [] if isinstance(b, dict) and b.get("type") == "text"), None)
    if first is not None:
        try:
            doc["_json"] = json.loads(first.get("text", ""))
        except ValueError:
            pass
    return doc


def haystack(raw: dict[str, Any]) -> str:
    text = text_of(raw)
    if "structuredContent" in raw:
        text += "\n" + json.dumps(raw["structuredContent"], ensure_ascii=False, separators=(",", ":"))
    return text


def structure_problems(raw: dict[str, Any], strict: bool, report: Report, label: str) -> list[str]:
    problems = []
    content = raw.get("content")
    if not isinstance(content, list):
        problems.append(f"content is not an array: {clip(content)}")
    else:
        for i, block in enumerate(content):
            if not isinstance(block, dict) or not isinstance(block.get("type"), str):
                problems.append(f"content[{i}] has no type: {clip(block)}")
    if "isError" not in raw:
        if strict:
            problems.append("isError is missing (--strict)")
        else:
            report.warn(label, "isError is missing")
    elif not isinstance(raw["isError"], bool):
        problems.append(f"isError is not a boolean: {raw['isError']!r}")
    return problems


# ---------------------------------------------------------------------------------------------
# Scenario


def load_scenario(path: str) -> tuple[list[dict[str, Any]], list[str]]:
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    if isinstance(data, list):
        return data, []
    if isinstance(data, dict) and isinstance(data.get("steps", []), list):
        return data.get("steps", []), list(data.get("require_tools", []))
    raise ValueError(f"{path}: a scenario is a list of steps or {{\"require_tools\", \"steps\"}}")


async def run_step(
    session: ClientSession,
    recorder: Recorder,
    tools: dict[str, dict[str, Any]],
    step: dict[str, Any],
    number: int,
    args: argparse.Namespace,
    report: Report,
) -> None:
    tool = step.get("tool")
    arguments = step.get("arguments", {})
    expect = step.get("expect", {})
    label = f"[step {number}] {step.get('name') or tool}"
    problems: list[str] = []
    if not isinstance(tool, str):
        report.fail(label, ["the step has no tool name"])
        return

    schema = tools.get(tool, {}).get("inputSchema")
    if isinstance(schema, dict):
        errors = argument_errors(schema, arguments)
        if expect.get("args_schema_valid", True) and errors:
            problems.append("arguments violate the inputSchema: " + "; ".join(errors))
        if expect.get("args_schema_valid", True) is False and not errors:
            problems.append("arguments were meant to violate the inputSchema, but they are valid")

    rpc_expected = expect.get("rpc_error", False)
    started = time.monotonic()
    raw: dict[str, Any] | None = None
    try:
        recorder.last_result = None
        with anyio.fail_after(float(step.get("timeout", args.timeout))):
            await session.call_tool(tool, arguments)
        raw = recorder.last_result
        if raw is None:
            problems.append("no result was seen on the wire")
    except MCPError as exc:
        if rpc_expected is False:
            problems.append(f"JSON-RPC error {exc.code}: {exc.message}")
        elif rpc_expected is not True and exc.code != rpc_expected:
            problems.append(f"JSON-RPC error {exc.code}, expected {rpc_expected}: {exc.message}")
    except TimeoutError:
        problems.append(f"no answer within {step.get('timeout', args.timeout)} s")
    except Exception as exc:  # noqa: BLE001 - a failed step, not a crash of the client
        raw = recorder.last_result
        if raw is None:
            problems.append(f"the call raised {type(exc).__name__}: {exc}")
        else:
            problems.append(f"the client SDK rejected the result ({type(exc).__name__}: {exc})")
    elapsed_ms = (time.monotonic() - started) * 1000

    if raw is not None:
        if rpc_expected is not False:
            problems.append(f"expected a JSON-RPC error, got a result: {clip(raw)}")
        problems += structure_problems(raw, args.strict, report, label)
        is_error = raw.get("isError") is True
        if "is_error" in expect:
            if is_error != bool(expect["is_error"]):
                problems.append(f"isError is {is_error}, expected {bool(expect['is_error'])}")
        elif is_error:
            problems.append("the tool answered isError: true")
        hay = haystack(raw)
        for part in expect.get("contains", []):
            if part not in hay:
                problems.append(f"does not contain {part!r}")
        for part in expect.get("not_contains", []):
            if part in hay:
                problems.append(f"contains {part!r}")
        for pattern in expect.get("matches", []):
            if re.search(pattern, hay) is None:
                problems.append(f"does not match /{pattern}/")
        doc = document(raw)
        for path, spec in expect.get("json_paths", {}).items():
            problems += path_problems(path, doc, spec)
        if problems:
            problems.append(f"output: {clip(hay, args.preview)}")
    if "max_ms" in expect and elapsed_ms > float(expect["max_ms"]):
        problems.append(f"took {elapsed_ms:.0f} ms, budget {expect['max_ms']} ms")
    if report.check(label, problems, f"{elapsed_ms:.0f} ms") and args.verbose and raw is not None:
        print(f"      output: {clip(haystack(raw), args.preview)}", flush=True)


# ---------------------------------------------------------------------------------------------
# The session


def parse_pairs(items: list[str], sep: str, what: str) -> dict[str, str]:
    pairs = {}
    for item in items:
        key, found, value = item.partition(sep)
        if not found or not key.strip():
            raise SystemExit(f"client.py: {what} must be KEY{sep}VALUE, got {item!r}")
        pairs[key.strip()] = value.strip() if sep == ":" else value
    return pairs


async def connect(stack: AsyncExitStack, args: argparse.Namespace) -> tuple[Any, Any]:
    if args.stdio:
        words = shlex.split(args.stdio)
        params = StdioServerParameters(command=words[0], args=words[1:], env=parse_pairs(args.env, "=", "--env"))
        return await stack.enter_async_context(stdio_client(params))
    headers = parse_pairs(args.header, ":", "--header")
    if args.bearer_env:
        token = os.environ.get(args.bearer_env, "").strip()
        if not token:
            raise SystemExit(f"client.py: --bearer-env {args.bearer_env}: the variable is empty or unset")
        headers["Authorization"] = f"Bearer {token}"
    http = await stack.enter_async_context(
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(args.timeout, read=300.0))
    )
    streams = await stack.enter_async_context(streamable_http_client(args.http, http_client=http))
    return streams[0], streams[1]


def dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True) if hasattr(model, "model_dump") else model


async def run(args: argparse.Namespace, report: Report) -> None:
    steps, required = load_scenario(args.scenario) if args.scenario else ([], [])
    required += args.require_tool
    recorder = Recorder()
    async with AsyncExitStack() as stack:
        try:
            read, write = await connect(stack, args)
            session = await stack.enter_async_context(
                ClientSession(RecordingStream(read, recorder), write, read_timeout_seconds=args.timeout)
            )
            with anyio.fail_after(args.connect_timeout):
                init = await session.initialize()
        except Exception as exc:  # noqa: BLE001 - reported as a failed check
            report.fail("[check] initialize", [f"{type(exc).__name__}: {exc}"])
            return
        info = dump(init)
        problems = []
        if not info.get("serverInfo", {}).get("name"):
            problems.append("serverInfo.name is missing")
        if "tools" not in info.get("capabilities", {}):
            problems.append("capabilities.tools is missing")
        server = info.get("serverInfo", {})
        report.check(
            "[check] initialize",
            problems,
            f"server={server.get('name')} {server.get('version', '')} protocol={info.get('protocolVersion')}",
        )

        listed: list[dict[str, Any]] = []
        cursor = None
        try:
            for _ in range(100):
                page = await session.list_tools(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
                listed += [dump(t) for t in page.tools]
                cursor = page.next_cursor
                if not cursor:
                    break
        except Exception as exc:  # noqa: BLE001
            report.fail("[check] tools/list", [f"{type(exc).__name__}: {exc}"])
            return
        report.ok("[check] tools/list", f"{len(listed)} tools: {', '.join(t.get('name', '?') for t in listed)}")

        tools: dict[str, dict[str, Any]] = {}
        for tool in listed:
            name = tool.get("name", "?")
            problems = []
            if name in tools:
                problems.append("the name is listed twice")
            tools[name] = tool
            problems += schema_problems(tool.get("inputSchema"), "inputSchema")
            if "outputSchema" in tool:
                problems += schema_problems(tool["outputSchema"], "outputSchema")
            if not re.fullmatch(r"[A-Za-z0-9_.-]{1,128}", name):
                report.warn(f"[check] schema {name}", "the name is outside [A-Za-z0-9_.-]{1,128}")
            if not tool.get("description"):
                report.warn(f"[check] schema {name}", "no description")
            schema = tool.get("inputSchema") if isinstance(tool.get("inputSchema"), dict) else {}
            unknown = [r for r in schema.get("required", []) if r not in schema.get("properties", {})]
            if unknown:
                report.warn(f"[check] schema {name}", f"required names not in properties: {unknown}")
            report.check(f"[check] schema {name}", problems)
            if not args.no_schemas:
                print(f"      inputSchema: {json.dumps(tool.get('inputSchema'), ensure_ascii=False)}", flush=True)

        if required:
            missing = [t for t in required if t not in tools]
            report.check("[check] required tools", [f"missing: {', '.join(missing)}"] if missing else [],
                         ", ".join(required))

        for number, step in enumerate(steps, 1):
            await run_step(session, recorder, tools, step, number, args, report)

        try:
            with anyio.fail_after(args.timeout):
                await session.send_ping()
            report.ok("[check] ping after scenario")
        except Exception as exc:  # noqa: BLE001
            report.fail("[check] ping after scenario", [f"{type(exc).__name__}: {exc}"])

        report.check("[check] wire", recorder.bad, f"{recorder.received} JSON-RPC messages received")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--stdio", metavar="CMD", help="start the server with this command line (shell words)")
    target.add_argument("--http", metavar="URL", help="a Streamable HTTP endpoint, e.g. http://127.0.0.1:60606/mcp")
    parser.add_argument("--env", action="append", default=[], metavar="K=V", help="stdio: an environment variable")
    parser.add_argument("--header", action="append", default=[], metavar="'K: V'", help="HTTP: a request header")
    parser.add_argument(
        "--bearer-env",
        metavar="VAR",
        help="HTTP: send Authorization: Bearer with the token in this environment variable (kept out of argv)",
    )
    parser.add_argument("--scenario", metavar="FILE", help="steps to run (JSON)")
    parser.add_argument("--require-tool", action="append", default=[], metavar="NAME", help="fail if not listed")
    parser.add_argument("--strict", action="store_true", help="a result without isError fails")
    parser.add_argument("--no-schemas", action="store_true", help="do not print the input schemas")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per request (default 30)")
    parser.add_argument("--connect-timeout", type=float, default=60.0, help="seconds to initialize (default 60)")
    parser.add_argument("--preview", type=int, default=1500, help="characters of output shown on failure")
    parser.add_argument("-v", "--verbose", action="store_true", help="show the output of passing steps")
    args = parser.parse_args(argv)

    report = Report()
    try:
        anyio.run(run, args, report)
    except (OSError, ValueError) as exc:
        report.fail("[check] client", [f"{type(exc).__name__}: {exc}"])
    report.summary()
    return 0 if report.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
