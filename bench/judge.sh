#!/usr/bin/env bash
# The soak checker on a million attempts: soak.Judge (the function hookcert soak
# judges with) over a synthetic soak-shaped history of 1,000,000 attempts and the
# final reads of every key, timed by go test -bench, printed beside the 10 s target.
# Usage: bench/judge.sh [iterations, default 3]
set -euo pipefail
N=${1:-3}
cd "$(dirname "$0")/.."
out=$(go test -run '^$' -bench '^BenchmarkJudgeMillionAttempts$' -benchtime "${N}x" -count 1 ./scenarios/soak)
echo "$out" | grep -E '^(Benchmark|cpu:)'
echo "$out" | awk -v loadavg="$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)" '/^BenchmarkJudgeMillionAttempts/ {
	for (i = 1; i <= NF; i++) { if ($(i+1) == "s/judge") s = $i; if ($(i+1) == "cpu-s/judge") c = $i }
	printf "\nchecker on 1,000,000 attempts: %.2f s per judge (wall) vs target 10 s: %.2fx of the target (%s)\n", s, s / 10, (s <= 10 ? "ok" : "OVER")
	printf "                               %.2f s CPU per judge (user+sys, GC included): %.2fx of the target\n", c, c / 10
	printf "(on a shared machine the wall time counts other processes holding the cores; load average: %s)\n", loadavg
	printf "summary: soak checker, 1,000,000 attempts|%.2f s per judge|%.2fx of 10 s|<= 10 s|%s\n", s, s / 10, (s <= 10 ? "ok" : "SHORT")
}'
