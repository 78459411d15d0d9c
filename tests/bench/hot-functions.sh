#!/usr/bin/env bash
# Writes runtime/cli/hot-functions.txt: the functions of warden's binaries
# that a tool call runs (first those of a call made after idle, then the
# rest of a call's cycle, cold then warm), then those an agent turn runs,
# each group most sampled first. The linker places them in this order
# (runtime/cli/build.rs). Run through `make hot-functions` after a change
# that moves the call path (a new wasmtime, a reworked call); a stale list
# only costs speed. Needs perf; the first group also needs its syscall
# tracepoints (root).
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

# The bench's own functions in samples read from stdin ("event ip sym
# dso" lines), most sampled first.
ranked() {
    awk -v dso="($bench)" '$1 == "cpu-clock:" && $NF == dso && NF == 4 { print $3 }' |
        sort | uniq -c | sort -rn | awk '{ print $2 }'
}

# Samples the bench run with "$@"; prints its functions, most sampled first.
sample() {
    perf record -q -F 20000 -e cpu-clock -o "$tmp/perf.data" "$bench" "$@" >/dev/null
    perf script -i "$tmp/perf.data" -F event,ip,sym,dso --no-demangle 2>/dev/null | ranked
}

# The functions of the timed part of calls made after 10 ms of sleep: from
# the end of the sleep to the reset of the call's pool slot (or the next
# sleep), most sampled first. Nothing when the tracepoints are not open to
# this user.
timed_part() {
    perf record -q -F 20000 -e cpu-clock -e syscalls:sys_exit_clock_nanosleep \
        -e syscalls:sys_enter_ioctl -e syscalls:sys_enter_clock_nanosleep \
        -o "$tmp/window.data" "$bench" --profile-cold --sleep 10 --calls 3000 \
        >/dev/null 2>&1 || {
        echo "syscall tracepoints are not available: the list starts with the whole cycle" >&2
        return 0
    }
    perf script -i "$tmp/window.data" -F event,ip,sym,dso --no-demangle 2>/dev/null |
        awk '/sys_exit_clock_nanosleep/ { on = 1; next }
             /sys_enter_ioctl|sys_enter_clock_nanosleep/ { on = 0; next }
             on' | ranked
}

{
    timed_part
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
