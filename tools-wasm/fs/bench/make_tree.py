#!/usr/bin/env python3
"""Writes a source-like tree for timing grep against `rg -j1`.

Usage: make_tree.py DIR [MEGABYTES]   (default 320 MB)

30 x 20 directories of ~10 KiB text files made of code-like lines (one in
~2000 holds `needle_xyz`), a few binary files, and an ignored `build/`
directory (with a `.git` so that ripgrep reads `.gitignore` too).
See bench/README.md for the timing commands.
"""
import os
import random
import sys

root = sys.argv[1]
target = int(sys.argv[2] if len(sys.argv) > 2 else 320) << 20
rng = random.Random(42)
words = ["fn", "let", "mut", "return", "self", "match", "impl", "struct", "pub",
         "use", "if", "else", "for", "while", "loop", "Some", "None", "Ok", "Err",
         "value", "count", "buffer", "index", "result", "error", "config", "path",
         "handler", "request", "response", "stream", "reader", "writer", "token"]


def line():
    n = rng.randint(2, 14)
    text = "    " * rng.randint(0, 3) + " ".join(rng.choice(words) for _ in range(n))
    r = rng.random()
    if r < 0.0005:
        text += " needle_xyz"
    elif r < 0.01:
        text += " ParseError::new(\"bad input\")"
    return text + ";\n"


pool = [line() for _ in range(200_000)]
os.makedirs(os.path.join(root, ".git"), exist_ok=True)
with open(os.path.join(root, ".gitignore"), "w") as f:
    f.write("build/\n*.min.js\n")
written = 0
dirs = [f"d{i:02}/s{j:02}" for i in range(30) for j in range(20)]
k = 0
while written < target:
    d = os.path.join(root, dirs[k % len(dirs)])
    os.makedirs(d, exist_ok=True)
    lines = rng.randint(20, 600)
    start = rng.randrange(len(pool) - lines)
    data = "".join(pool[start:start + lines]).encode()
    if k % 997 == 0:
        data = b"\x00\x01binary" + data
    with open(os.path.join(d, f"f{k:05}.rs"), "wb") as f:
        f.write(data)
    written += len(data)
    k += 1
build = os.path.join(root, "build")
os.makedirs(build, exist_ok=True)
for i in range(200):
    with open(os.path.join(build, f"out{i}.rs"), "w") as f:
        f.write("".join(pool[i * 500:(i + 1) * 500]))
print(f"{k} files, {written >> 20} MiB under {root}")
