#!/usr/bin/env bash
# Per-delivery cost of the simulator's send path, before (a git revision,
# default HEAD) and after (the working tree), measured in one run: both test
# binaries are built first, then BenchmarkSend and BenchmarkSendParallel run
# alternately, every round printed side by side. The working tree's
# simulator/send_bench_test.go is used for both (its API exists at HEAD).
# Usage: simulator/benchmark/beforeafter.sh [revision, default HEAD] [rounds, default 3] [benchtime, default 2s]
set -euo pipefail
REV=${1:-HEAD}
ROUNDS=${2:-3}
BT=${3:-2s}
cd "$(dirname "$0")/../.."
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir "$TMP/src"
git archive "$REV" | tar -x -C "$TMP/src"
cp simulator/send_bench_test.go "$TMP/src/simulator/"
(cd "$TMP/src" && go test -c -o "$TMP/before.test" ./simulator/)
go test -c -o "$TMP/after.test" ./simulator/
echo "BenchmarkSend: one signed, recorded delivery over keep-alive to a minimal receiver; $(nproc) CPUs"
printf '%-6s %-7s %-24s %12s %11s %13s\n' round side benchmark ns/delivery B/delivery allocs/delivery
for i in $(seq "$ROUNDS"); do
	for side in before after; do
		"$TMP/$side.test" -test.run '^$' -test.bench 'BenchmarkSend' -test.benchtime "$BT" -test.benchmem |
			awk -v r="$i" -v s="$side" '/^BenchmarkSend/ {printf "%-6s %-7s %-24s %12s %11s %13s\n", r, s, $1, $3, $5, $7}'
	done
done
