"""A small streamable-HTTP MCP server (the official `mcp` SDK) for warden's
tests. It listens on a loopback port of its own choosing, prints the port,
and serves one tool, `whoami`, which answers with the Authorization header
the request carried: the test checks that warden sent the secret and that
the model never saw it. `--port N` listens on that port. `--gets-to FILE`
answers every GET (the client's notification stream) with an empty stream
that ends at once, and appends a line to FILE for each.
"""

import socket
import sys

import uvicorn
from mcp.server.mcpserver import MCPServer

# The Authorization header of the latest request (one client at a time).
last_auth = ""
server = MCPServer("remote-demo")


@server.tool()
def whoami(greeting: str) -> str:
    """Says hello and shows the credentials the request carried."""
    return f"{greeting}; authorization: {last_auth or 'none'}"


def with_auth(app):
    async def wrapped(scope, receive, send):
        global last_auth
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            last_auth = headers.get(b"authorization", b"").decode()
        await app(scope, receive, send)

    return wrapped


def short_gets(app, log):
    async def wrapped(scope, receive, send):
        if scope["type"] == "http" and scope["method"] == "GET":
            with open(log, "a") as f:
                f.write("GET\n")
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"text/event-stream")]})
            await send({"type": "http.response.body", "body": b""})
            return
        await app(scope, receive, send)

    return wrapped


def main():
    # `--port N`: that port (to come back on it after a restart); else any.
    port = int(sys.argv[sys.argv.index("--port") + 1]) if "--port" in sys.argv else 0
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen()
    print(sock.getsockname()[1], flush=True)
    app = with_auth(server.streamable_http_app())
    if "--gets-to" in sys.argv:
        app = short_gets(app, sys.argv[sys.argv.index("--gets-to") + 1])
    config = uvicorn.Config(app, log_level="warning")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    sys.exit(main())
