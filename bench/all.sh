#!/usr/bin/env bash
# make bench: every benchmark in one run, each printing its rounds, then one
# table of their figures side by side with their targets. A benchmark that
# cannot run (a tool missing) says why and how to get it, and its line reads
# "skipped"; one that fails shows its error and the table says so.
set -uo pipefail
cd "$(dirname "$0")/.."
LOG=$(mktemp)
trap 'rm -f "$LOG"' EXIT
step() { # name command...
	local name=$1
	shift
	echo
	echo "=== $name: $*"
	if ! "$@" 2>&1 | tee -a "$LOG"; then
		echo "summary: $name|FAILED (see its output above)|-|-|FAILED" >>"$LOG"
	fi
}
step "commit ceiling" ./bench/ceiling.sh
step "reference vs pgbench" ./reference/benchmark/pgbench.sh
step "simulator vs wrk" ./simulator/benchmark/bench.sh
step "soak overhead" ./bench/soak-overhead.sh
step "inbox drain" ./reference/benchmark/inbox.sh
step "purge latency" ./reference/benchmark/bench.sh
step "soak checker" ./bench/judge.sh

echo
echo "=== side by side ($(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg))"
{
	echo "figure|measured|ratio|target|verdict"
	grep -a '^summary: ' "$LOG" | sed 's/^summary: //'
} | column -t -s '|'
