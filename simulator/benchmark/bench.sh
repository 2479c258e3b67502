#!/usr/bin/env bash
# Simulator benchmark: delivery throughput beside wrk on the same no-op receiver,
# measured in one run, then the barrier's release spread as the receiver sees it.
# Usage: simulator/benchmark/bench.sh [duration, default 5s] [connections, default 16]
set -euo pipefail
DUR=${1:-5s}
CONNS=${2:-16}
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
echo "receiver: $URL (no-op, Go net/http); $CONNS connections, $DUR each; $(nproc) CPUs"

"$BIN" wrkscript -out "$TMP/post.lua"
SIM_OUT=$("$BIN" fire -url "$URL/hook" -c "$CONNS" -d "$DUR")
echo "$SIM_OUT" | grep -v '^SIM_RATE='
SIM_RATE=$(echo "$SIM_OUT" | sed -n 's/^SIM_RATE=//p')

WRK_OUT=$(wrk -t2 -c"$CONNS" -d"$DUR" -s "$TMP/post.lua" "$URL/hook")
echo "wrk -t2 -c$CONNS -d$DUR (pre-signed identical POST):"
echo "$WRK_OUT" | grep -E 'Requests/sec|requests in|Non-2xx|Socket errors' | sed 's/^/  /'
WRK_RATE=$(echo "$WRK_OUT" | awk '/Requests\/sec/ {print $2}')

"$BIN" compare -sim "$SIM_RATE" -wrk "$WRK_RATE"
"$BIN" spread -url "$URL" -ts-url "$TS_URL" -copies 16 -n 50
