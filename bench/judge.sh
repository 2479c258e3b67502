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
echo "$out" | awk '/^BenchmarkJudgeMillionAttempts/ {
	for (i = 1; i <= NF; i++) if ($(i+1) == "s/judge") s = $i
	printf "\nchecker on 1,000,000 attempts: %.2f s per judge vs target 10 s: %.2fx of the target (%s)\n", s, s / 10, (s <= 10 ? "ok" : "OVER")
}'
