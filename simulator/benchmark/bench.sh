#!/usr/bin/env bash
# Simulator benchmark: delivery throughput beside wrk on the same no-op receiver,
# measured in one run (alternating rounds, same connections, duration and
# warm-up; every round printed, then the medians), then the barrier's release
# spread as the receiver sees it.
# Usage: simulator/benchmark/bench.sh [duration, default 3s] [connections, default 16]
#        [rounds, default 5] [warm-up, default 1s]
set -euo pipefail
DUR=${1:-3s}
CONNS=${2:-16}
ROUNDS=${3:-5}
WARMUP=${4:-1s}
cd "$(dirname "$0")/../.."

if ! command -v wrk >/dev/null 2>&1; then
	# The comparison needs wrk itself; it is not installed behind the user's back.
	echo "simulator vs wrk: skipped: wrk is not installed (Debian/Ubuntu: apt-get install -y wrk; macOS: brew install wrk)"
	echo "summary: simulator vs wrk|skipped: wrk not installed (apt-get install -y wrk)|-|>= 0.90x|skipped"
	exit 0
fi

TMP=$(mktemp -d)
BIN="$TMP/benchmark"
go build -o "$BIN" ./simulator/benchmark
"$BIN" serve >"$TMP/url" &
SERVER=$!
trap 'kill "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; rm -rf "$TMP"' EXIT
for _ in $(seq 50); do [ "$(wc -l 2>/dev/null <"$TMP/url" || echo 0)" -ge 2 ] && break; sleep 0.1; done
URL=$(sed -n 1p "$TMP/url")
TS_URL=$(sed -n 2p "$TMP/url")
echo "receiver: $URL (no-op, Go net/http); $(nproc) CPUs"

"$BIN" wrkscript -out "$TMP/post.lua"
"$BIN" rounds -url "$URL/hook" -script "$TMP/post.lua" -c "$CONNS" -d "$DUR" -warmup "$WARMUP" -rounds "$ROUNDS" -receiver-pid "$SERVER"
"$BIN" spread -url "$URL" -ts-url "$TS_URL" -copies 16 -n 50
