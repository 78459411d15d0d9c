#!/bin/sh
# Times grep's search core natively (the ignored test `bench_tree`) against
# `rg -j1`, run after run, on DIR (a tree, or one file) and a few patterns.
# Usage, from the repository root: tools-wasm/fs/bench/compare.sh /ABSOLUTE/DIR
# (the test runs in the crate directory).
set -eu
case $1 in /*) ;; *) echo "compare.sh: give an absolute path" >&2; exit 2 ;; esac
GREP_BENCH_DIR=$1 \
GREP_BENCH_PATTERNS='needle_xyz;;ParseError;;(?i)needle_XYZ;;fn\s+\w+_handler;;[A-Z][a-z]+Error::new' \
GREP_BENCH_RUNS=${RUNS:-7} \
    cargo test --release --manifest-path tools-wasm/Cargo.toml -p fs bench_tree \
    -- --ignored --nocapture 2>/dev/null | grep '^bench'
