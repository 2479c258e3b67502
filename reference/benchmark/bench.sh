#!/usr/bin/env bash
# Retention purge benchmark: one million expired keys purged while signed deliveries
# keep arriving at a fixed rate; prints the purge duration and the p50/p99
# acknowledgement latency during the purge beside the same figures without it,
# measured in one run against one in-process reference receiver (loopback HTTP,
# a fresh database on $HOOKCERT_DATABASE_URL's server, dropped afterwards).
# Usage: reference/benchmark/bench.sh [rows, default 1000000] [rate/s, default 200]
#        [baseline window, default 30s] [batch, default 250] [pause, default 25ms]
set -euo pipefail
ROWS=${1:-1000000}
RATE=${2:-200}
DUR=${3:-30s}
BATCH=${4:-250}
PAUSE=${5:-25ms}
cd "$(dirname "$0")/../.."
exec go run ./reference/benchmark/purge -rows "$ROWS" -rate "$RATE" -duration "$DUR" -batch "$BATCH" -pause "$PAUSE"
