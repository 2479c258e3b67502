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
	if [ "$(id -u)" -ne 0 ]; then
		echo "bench.sh: wrk is missing and installing it needs root (apt-get install -y wrk)" >&2
		exit 1
	fi
	echo "installing wrk from Debian packages..." >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null
fi

TMP=$(mktemp -d)
BIN="$TMP/benchmark"
go build -o "$BIN" ./simulator/benchmark
"$BIN" serve >"$TMP/url" &
SERVER=$!
trap 'kill "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; rm -rf "$TMP"' EXIT
for _ in $(seq 50); do [ "$(wc -l <"$TMP/url")" -ge 2 ] && break; sleep 0.1; done
URL=$(sed -n 1p "$TMP/url")
TS_URL=$(sed -n 2p "$TMP/url")
echo "receiver: $URL (no-op, Go net/http); $(nproc) CPUs"

"$BIN" wrkscript -out "$TMP/post.lua"
"$BIN" rounds -url "$URL/hook" -script "$TMP/post.lua" -c "$CONNS" -d "$DUR" -warmup "$WARMUP" -rounds "$ROUNDS" -receiver-pid "$SERVER"
"$BIN" spread -url "$URL" -ts-url "$TS_URL" -copies 16 -n 50
