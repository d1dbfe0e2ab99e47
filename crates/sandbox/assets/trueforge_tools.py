"""Call the agent's MCP tools from code running in the TrueForge sandbox (Code Mode).

In Python::

    from trueforge_tools import call_tool, list_tools
    issues = call_tool("github", "search_issues", {"query": "is:open label:bug"})
    for issue in issues["items"]:
        call_tool("github", "add_label", {"issue": issue["number"], "label": "triaged"})

From a shell (prints the result as JSON; errors go to stderr with exit code 1)::

    python3 -m trueforge_tools call-tool github search_issues '{"query": "is:open"}'
    python3 -m trueforge_tools call-tool github search_issues - < args.json
    python3 -m trueforge_tools list-tools github
    python3 -m trueforge_tools servers

Results are projected from the MCP CallToolResult: ``structuredContent`` when the tool gives it; a
single text block parsed as JSON when it parses, else the text; otherwise the list of content blocks;
``None`` when there is no content. A tool reporting an error (``isError``) raises ``ToolError``.

Python 3.11+ standard library only: the sandbox is offline. Each call opens its own connection to the
bridge, so calls from several threads (or ``asyncio.gather`` over the ``*_async`` functions) run in
parallel.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import socket
import sys
import time
from typing import Any

__all__ = [
    "ToolError",
    "call_tool",
    "call_tool_async",
    "list_tools",
    "list_tools_async",
    "servers",
]

SOCKET_ENV = "TRUEFORGE_BRIDGE_SOCKET"
TOKEN_ENV = "TRUEFORGE_BRIDGE_TOKEN"
SERVERS_ENV = "TRUEFORGE_TOOL_SERVERS"
TIMEOUT_ENV = "TRUEFORGE_BRIDGE_TIMEOUT_SECONDS"

DEFAULT_TIMEOUT_SECONDS = 300.0
# The largest answer read; a larger one is refused rather than filling the sandbox's memory.
MAX_RESPONSE_BYTES = 64 * 1024 * 1024
_READ_CHUNK = 64 * 1024

_request_ids = itertools.count(1)


class ToolError(Exception):
    """A call that did not give a result.

    ``source`` says where it failed: ``"tool"`` (the tool ran and reported an error), ``"caller"`` (the
    request was wrong or not allowed; retrying it will not help), ``"internal"`` (the host or an MCP
    server failed), ``"transport"`` (the bridge could not be reached or did not answer in time).
    """

    def __init__(self, message: str, source: str) -> None:
        super().__init__(message)
        self.message = message
        self.source = source


def servers() -> dict[str, dict[str, Any]]:
    """The servers this command may use: ``{name: {"description"?: str, "tools": [names]}}``."""
    raw = os.environ.get(SERVERS_ENV)
    if raw is None:
        raise _not_available(SERVERS_ENV)
    try:
        parsed = json.loads(raw)
    except ValueError as error:
        raise ToolError(f"{SERVERS_ENV} is not valid JSON: {error}", "caller") from None
    if not isinstance(parsed, dict):
        raise ToolError(f"{SERVERS_ENV} is not a JSON object", "caller")
    return parsed


def list_tools(server: str) -> list[dict[str, Any]]:
    """The tools of ``server`` this command may call, as MCP tool descriptions (name, inputSchema, ...)."""
    _check_allowed(server, None)
    result = _request({"op": "list_tools", "server": server})
    if isinstance(result, dict) and isinstance(result.get("tools"), list):
        return result["tools"]
    raise ToolError(f"the bridge answered an unexpected tool list for '{server}'", "internal")


def call_tool(server: str, tool: str, arguments: dict[str, Any] | None = None) -> Any:
    """Calls ``tool`` on ``server`` with ``arguments`` and returns its projected result."""
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise ToolError(
            f"arguments for '{tool}' must be a dict, not {type(arguments).__name__}", "caller"
        )
    _check_allowed(server, tool)
    result = _request(
        {"op": "call_tool", "server": server, "tool": tool, "arguments": arguments}
    )
    return _project(server, tool, result)


async def call_tool_async(
    server: str, tool: str, arguments: dict[str, Any] | None = None
) -> Any:
    """``call_tool`` in a worker thread, for ``asyncio`` code."""
    return await asyncio.to_thread(call_tool, server, tool, arguments)


async def list_tools_async(server: str) -> list[dict[str, Any]]:
    """``list_tools`` in a worker thread, for ``asyncio`` code."""
    return await asyncio.to_thread(list_tools, server)


def _not_available(variable: str) -> ToolError:
    return ToolError(
        f"Code Mode is not available here: {variable} is not set (tools can only be called from a "
        "command the agent runs in its sandbox during a turn)",
        "caller",
    )


def _check_allowed(server: str, tool: str | None) -> None:
    # Only for a clear message early: the bridge checks the same on the host.
    known = servers()
    entry = known.get(server)
    if not isinstance(entry, dict):
        available = ", ".join(sorted(known)) or "none"
        raise ToolError(
            f"MCP server '{server}' is not available in Code Mode; available servers: {available}",
            "caller",
        )
    if tool is None:
        return
    tools = entry.get("tools")
    if not isinstance(tools, list) or tool not in tools:
        allowed = ", ".join(tools) if isinstance(tools, list) and tools else "none"
        raise ToolError(
            f"Tool '{tool}' is not available on MCP server '{server}' in Code Mode; "
            f"allowed tools: {allowed}",
            "caller",
        )


def _timeout_seconds() -> float:
    raw = os.environ.get(TIMEOUT_ENV)
    if raw is None or raw.strip() == "":
        return DEFAULT_TIMEOUT_SECONDS
    try:
        value = float(raw)
    except ValueError:
        raise ToolError(f"{TIMEOUT_ENV} must be a number of seconds, not {raw!r}", "caller") from None
    if not value > 0:
        raise ToolError(f"{TIMEOUT_ENV} must be positive, not {raw!r}", "caller")
    return value


def _request(fields: dict[str, Any]) -> Any:
    """Sends one request on a fresh connection and returns the bridge's ``result``."""
    path = os.environ.get(SOCKET_ENV)
    if not path:
        raise _not_available(SOCKET_ENV)
    token = os.environ.get(TOKEN_ENV)
    if not token:
        raise _not_available(TOKEN_ENV)
    timeout = _timeout_seconds()
    request_id = next(_request_ids)
    try:
        request = {"token": token, "id": request_id, **fields}
        # The trace the command was started in (W3C Trace Context), so these calls join it.
        for key, variable in (("traceparent", "TRACEPARENT"), ("tracestate", "TRACESTATE")):
            if os.environ.get(variable):
                request[key] = os.environ[variable]
        line = json.dumps(request, ensure_ascii=False)
    except (TypeError, ValueError) as error:
        raise ToolError(f"the arguments cannot be sent as JSON: {error}", "caller") from None
    deadline = time.monotonic() + timeout
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.settimeout(timeout)
            connection.connect(path)
            connection.sendall(line.encode("utf-8") + b"\n")
            raw = _read_line(connection, deadline)
    except TimeoutError:
        raise ToolError(
            f"the tool bridge did not answer within {timeout:g} s (set {TIMEOUT_ENV} to wait longer)",
            "transport",
        ) from None
    except (FileNotFoundError, ConnectionRefusedError):
        raise ToolError(
            f"the tool bridge is not running at {path} (the turn may have ended)", "transport"
        ) from None
    except OSError as error:
        raise ToolError(f"the tool bridge could not be reached: {error}", "transport") from None
    try:
        response = json.loads(raw)
    except ValueError as error:
        raise ToolError(f"the tool bridge answered malformed JSON: {error}", "transport") from None
    if not isinstance(response, dict):
        raise ToolError("the tool bridge answered something other than a JSON object", "transport")
    if response.get("ok") is True:
        if response.get("id") != request_id:
            raise ToolError("the tool bridge answered another request", "transport")
        return response.get("result")
    message = response.get("error")
    source = response.get("source")
    raise ToolError(
        message if isinstance(message, str) and message else "the tool bridge refused the request",
        source if source in ("caller", "internal", "transport") else "internal",
    )


def _read_line(connection: socket.socket, deadline: float) -> bytes:
    """Reads up to the first newline, within the deadline and ``MAX_RESPONSE_BYTES``."""
    received = bytearray()
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        connection.settimeout(remaining)
        chunk = connection.recv(_READ_CHUNK)
        if not chunk:
            if received:
                return bytes(received)
            raise ToolError("the tool bridge closed the connection without answering", "transport")
        newline = chunk.find(b"\n")
        if newline >= 0:
            received += chunk[:newline]
            return bytes(received)
        received += chunk
        if len(received) > MAX_RESPONSE_BYTES:
            raise ToolError(
                f"the tool's answer is larger than {MAX_RESPONSE_BYTES} bytes", "transport"
            )


def _project(server: str, tool: str, result: Any) -> Any:
    """Turns an MCP CallToolResult into the value a script wants."""
    if not isinstance(result, dict):
        return result
    content = result.get("content")
    if not isinstance(content, list):
        content = []
    if result.get("isError"):
        texts = [
            block["text"]
            for block in content
            if isinstance(block, dict)
            and block.get("type") == "text"
            and isinstance(block.get("text"), str)
        ]
        message = "\n".join(texts) or f"tool '{tool}' on '{server}' failed without a message"
        raise ToolError(message, "tool")
    structured = result.get("structuredContent")
    if structured is not None:
        return structured
    if not content:
        return None
    if len(content) == 1 and isinstance(content[0], dict) and content[0].get("type") == "text":
        text = content[0].get("text", "")
        try:
            return json.loads(text)
        except (TypeError, ValueError):
            return text
    return content


def _parse_cli_arguments(raw: str) -> dict[str, Any]:
    if raw == "-":
        raw = sys.stdin.read()
    try:
        arguments = json.loads(raw)
    except ValueError as error:
        raise ToolError(f"the arguments are not valid JSON: {error}", "caller") from None
    if not isinstance(arguments, dict):
        raise ToolError("the arguments must be a JSON object", "caller")
    return arguments


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m trueforge_tools",
        description="Call the agent's MCP tools from the sandbox.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    call = commands.add_parser("call-tool", help="call a tool and print its result as JSON")
    call.add_argument("server")
    call.add_argument("tool")
    call.add_argument(
        "arguments", nargs="?", default="{}", help="a JSON object, or - to read it from stdin"
    )
    listing = commands.add_parser("list-tools", help="print the tools of a server as JSON")
    listing.add_argument("server")
    commands.add_parser("servers", help="print the servers and their allowed tools as JSON")
    options = parser.parse_args(argv)
    try:
        if options.command == "call-tool":
            result = call_tool(
                options.server, options.tool, _parse_cli_arguments(options.arguments)
            )
        elif options.command == "list-tools":
            result = list_tools(options.server)
        else:
            result = servers()
    except ToolError as error:
        print(f"error ({error.source}): {error.message}", file=sys.stderr)
        return 1
    print(json.dumps(result, ensure_ascii=False, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
