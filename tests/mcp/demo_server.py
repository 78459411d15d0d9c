"""A small MCP server on stdio (standard library only) for warden's tests.

Its tool `probe` does what a hostile or careless server might: it writes a
file where it was told to, connects to a loopback port, and leaves a
process behind. It reports what happened and always answers normally, so
the test can check on the host that the confinement, not the server, said no.

Its tool `echo` answers its text; `env` its HOME, TMPDIR and PLANTED; `chatter` sends notifications without end and never answers (`--chatter`: from the start); `flood` answers 17 MiB of it in one
message. Its tool `crash` dies the way a broken server does: a traceback on stderr,
then exit, without answering. With `--noisy` it first writes 1 MiB of log
lines to stderr, as a chatty server does. With `--stall-after-crash DIR`,
`crash` first leaves a file in DIR, and a server started while that file
exists never answers (a restart that hangs); with `--fail-after-crash DIR`,
it exits at once instead (a restart that fails), and each start is
counted in DIR/starts. With `--endless-list`, `tools/list` always gives
a next page. With `--meet DIR SELF OTHER`, it leaves DIR/SELF and answers
only once DIR/OTHER exists (another server started alongside it), giving
up after 10 s.
"""

import json
import os
import socket
import subprocess
import sys
import threading
import time


OUT = threading.Lock()


def answer(msg_id, result):
    with OUT:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg_id, "result": result}) + "\n")
        sys.stdout.flush()


def chatter():
    """Small `notifications/message` without end, as fast as they go."""
    line = json.dumps({"jsonrpc": "2.0", "method": "notifications/message",
                       "params": {"level": "info", "data": "tick " * 20}}) + "\n"
    while True:
        with OUT:
            sys.stdout.write(line * 64)
            sys.stdout.flush()


def probe(args):
    report = []
    try:
        with open(args["write"], "w") as f:
            f.write("escaped")
        report.append("write: ok")
    except OSError as e:
        report.append(f"write: {e.strerror}")
    try:
        socket.create_connection(("127.0.0.1", int(args["port"])), timeout=2).close()
        report.append("connect: ok")
    except OSError as e:
        report.append(f"connect: {e.strerror or e}")
    # A process that would outlive the server if nothing stopped it.
    subprocess.Popen(
        ["sh", "-c", f"sleep 1000; : {args.get('marker', '')}"],
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    report.append(f"marker: {args.get('marker', '')}")
    return "; ".join(report)


TOOLS = [
    {
        "name": "echo",
        "description": "Answers its text.",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
    },
    {
        "name": "env",
        "description": "Answers its HOME, TMPDIR and PLANTED variables, as JSON.",
        "inputSchema": {"type": "object", "properties": {}},
    },
    {
        "name": "chatter",
        "description": "Sends notifications without end and never answers.",
        "inputSchema": {"type": "object", "properties": {}},
    },
    {
        "name": "flood",
        "description": "Answers 17 MiB of text in one message.",
        "inputSchema": {"type": "object", "properties": {}},
    },
    {
        "name": "crash",
        "description": "Writes a traceback to stderr and exits without answering.",
        "inputSchema": {
            "type": "object",
            "properties": {"marker": {"type": "string"}},
        },
    },
    {
        "name": "probe",
        "description": "Writes a file, connects to a port, and reports what happened.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "write": {"type": "string"},
                "port": {"type": "integer"},
                "marker": {"type": "string"},
            },
            "required": ["write", "port"],
        },
    }
]

if "--bad-schema" in sys.argv:
    # A schema that is no JSON Schema: no model endpoint would take it.
    TOOLS.append({
        "name": "bad",
        "description": "Has a broken schema.",
        "inputSchema": {"type": "object", "properties": {"x": {"type": "bogus"}}},
    })

if "--bloated" in sys.argv:
    # A 300 KB description and a 100 KB schema: what a broken or hostile
    # server may list.
    TOOLS[0] = dict(TOOLS[0], description="Echoes. " + "padding " * 40000)
    TOOLS.append({
        "name": "huge",
        "description": "Takes many fields.",
        "inputSchema": {
            "type": "object",
            "properties": {f"field_{i:05}": {"type": "string", "description": "x" * 80} for i in range(1000)},
        },
    })

if "--many" in sys.argv:
    # 100 tools of 3 KB each: more than a server may send with every request.
    for i in range(100):
        TOOLS.append({
            "name": f"tool_{i:03}",
            "description": f"Tool {i}. " + "detail " * 430,
            "inputSchema": {"type": "object", "properties": {}},
        })

STALL_DIR = None
if "--stall-after-crash" in sys.argv:
    STALL_DIR = sys.argv[sys.argv.index("--stall-after-crash") + 1]
    if os.path.exists(os.path.join(STALL_DIR, "crashed")):
        time.sleep(3600)
if "--fail-after-crash" in sys.argv:
    STALL_DIR = sys.argv[sys.argv.index("--fail-after-crash") + 1]
    with open(os.path.join(STALL_DIR, "starts"), "a") as f:
        f.write("start\n")
    if os.path.exists(os.path.join(STALL_DIR, "crashed")):
        sys.exit("fatal: the demo server cannot start after its crash")

if "--meet" in sys.argv:
    at = sys.argv.index("--meet")
    meet_dir, me, other = sys.argv[at + 1 : at + 4]
    open(os.path.join(meet_dir, me), "w").close()
    deadline = time.monotonic() + 10
    while not os.path.exists(os.path.join(meet_dir, other)):
        if time.monotonic() > deadline:
            sys.exit(f"fatal: server {other} did not start alongside {me}")
        time.sleep(0.05)

if "--noisy" in sys.argv:
    for i in range(16384):
        sys.stderr.write(f"debug: log line {i:05} of a chatty server, padded to 64 bytes.\n"[:64])
    sys.stderr.flush()

for line in sys.stdin:
    msg = json.loads(line)
    method, msg_id = msg.get("method"), msg.get("id")
    if msg_id is None:
        continue
    if method == "initialize" and "--chatter" in sys.argv:
        # Notifications without end from the start: an idle client floods.
        threading.Thread(target=chatter, daemon=True).start()
    if method == "initialize":
        answer(
            msg_id,
            {
                "protocolVersion": msg["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "demo", "version": "1"},
            },
        )
    elif method == "tools/list" and "--endless-list" in sys.argv:
        # A new cursor every time: a list that never ends.
        page = int((msg.get("params") or {}).get("cursor") or "0")
        answer(msg_id, {"tools": TOOLS, "nextCursor": str(page + 1)})
    elif method == "tools/list":
        answer(msg_id, {"tools": TOOLS})
    elif method == "tools/call" and msg["params"]["name"] == "crash":
        marker = (msg["params"].get("arguments") or {}).get("marker", "")
        if STALL_DIR:
            open(os.path.join(STALL_DIR, "crashed"), "w").close()
        sys.stderr.write("Traceback (most recent call last):\n")
        sys.stderr.write('  File "demo_server.py", line 1, in <module>\n')
        sys.stderr.write(f"RuntimeError: the demo server broke ({marker})\n")
        sys.stderr.flush()
        os._exit(1)
    elif method == "tools/call" and msg["params"]["name"] == "flood":
        answer(msg_id, {"content": [{"type": "text", "text": "x" * (17 << 20)}], "isError": False})
    elif method == "tools/call" and msg["params"]["name"] == "chatter":
        # Notifications without end, and no answer: a call that floods.
        threading.Thread(target=chatter, daemon=True).start()
    elif method == "tools/call" and msg["params"]["name"] == "env":
        seen = {k: os.environ.get(k) for k in ("HOME", "TMPDIR", "PLANTED")}
        answer(msg_id, {"content": [{"type": "text", "text": json.dumps(seen)}], "isError": False})
    elif method == "tools/call" and msg["params"]["name"] == "echo":
        text = msg["params"]["arguments"]["text"]
        answer(msg_id, {"content": [{"type": "text", "text": text}], "isError": False})
    elif method == "tools/call":
        text = probe(msg["params"].get("arguments") or {})
        answer(msg_id, {"content": [{"type": "text", "text": text}], "isError": False})
    else:
        sys.stdout.write(
            json.dumps({"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32601, "message": "no such method"}})
            + "\n"
        )
        sys.stdout.flush()
