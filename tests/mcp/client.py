"""Drives `warden mcp` with the official MCP Python SDK, over stdio.

Usage: client.py WARDEN WORKSPACE CALLS-JSON [warden mcp flags...]

CALLS-JSON is a list of {"name": ..., "arguments": {...}}, or of
{"method": ..., "params": ...} for a request sent as it is (a malformed
one, through the SDK's own connection). Prints one JSON
document: the server's name, its tools (name, description, inputSchema),
each call's isError and text (or a raw request's result or JSON-RPC error
code and message), and the messages of the elicitations the
server sent. With WARDEN_TEST_ELICIT=accept (or decline) set, the client
supports elicitation and gives that answer; without it, it does not.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError


async def main() -> None:
    warden, workspace, calls, *flags = sys.argv[1:]
    params = StdioServerParameters(
        command=warden,
        args=["--workspace", workspace, "mcp", *flags],
        env=dict(os.environ),
    )
    report = {"elicited": []}
    answer = os.environ.get("WARDEN_TEST_ELICIT")

    async def elicit(context, params):
        report["elicited"].append(params.message)
        return types.ElicitResult(action=answer)

    callback = elicit if answer else None
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, elicitation_callback=callback) as session:
            init = await session.initialize()
            report["server"] = init.server_info.name
            listed = await session.list_tools()
            report["tools"] = [
                {"name": t.name, "description": t.description, "inputSchema": t.input_schema}
                for t in listed.tools
            ]
            report["calls"] = []
            for call in json.loads(calls):
                if "method" in call:
                    try:
                        raw = await session._dispatcher.send_raw_request(
                            call["method"], call["params"], {}
                        )
                        report["calls"].append({"result": raw})
                    except MCPError as e:
                        report["calls"].append(
                            {"error": {"code": e.error.code, "message": e.error.message}}
                        )
                    continue
                result = await session.call_tool(call["name"], call["arguments"])
                report["calls"].append(
                    {
                        "isError": result.is_error,
                        "text": "".join(c.text for c in result.content if c.type == "text"),
                    }
                )
    print(json.dumps(report))


asyncio.run(main())
