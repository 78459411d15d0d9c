#!/usr/bin/env bash
# Writes runtime/cli/hot-functions.txt: the functions of warden's binaries
# that a tool call runs (after idle, then warm) and then those an agent turn
# runs, each group most sampled first. The linker places them in this order
# (runtime/cli/build.rs). Run through `make hot-functions` after a change
# that moves the call path (a new wasmtime, a reworked call); a stale list
# only costs speed. Needs perf.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bench=${CARGO_TARGET_DIR:-$root/target}/release/warden-bench
out=$root/runtime/cli/hot-functions.txt
command -v perf >/dev/null || {
    echo "perf is needed to sample the bench: apt-get install linux-perf" >&2
    exit 1
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$root/tests"

# Samples the bench run with "$@"; prints its own functions, most sampled
# first.
sample() {
    perf record -q -F 20000 -e cpu-clock -o "$tmp/perf.data" "$bench" "$@" >/dev/null
    perf script -i "$tmp/perf.data" -F ip,sym,dso --no-demangle 2>/dev/null |
        awk -v dso="($bench)" '$NF == dso && NF == 3 { print $2 }' |
        sort | uniq -c | sort -rn | awk '{ print $2 }'
}

{
    sample --profile-cold --calls 3000
    sample --profile-read --calls 100000
    sample --profile-agent --calls 3000
} | awk '!seen[$0]++' >"$tmp/list"
n=$(wc -l <"$tmp/list")
[ "$n" -gt 100 ] || {
    echo "only $n functions sampled: is $bench built (make build test-guests)?" >&2
    exit 1
}
mv "$tmp/list" "$out"
echo "wrote $n functions to $out"
