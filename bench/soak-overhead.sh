#!/usr/bin/env bash
# Soak overhead: the harness's CPU (getrusage of the soaking process, user+sys)
# per delivery beside the reference receiver's, at --rate steps going up until
# one is not sustained, then unthrottled (the median of three runs): the highest
# rate this machine sustains while recording and checking. The receiver runs in
# its own process on a fresh database on $HOOKCERT_DATABASE_URL's server,
# dropped afterwards.
# Usage: bench/soak-overhead.sh [rates, default 250,500,1000,1250,1500,2000] [duration, default 5s]
#        [concurrency, default 8]
set -euo pipefail
RATES=${1:-250,500,1000,1250,1500,2000}
DUR=${2:-5s}
CONC=${3:-8}
cd "$(dirname "$0")/.."
exec go run ./bench/soakoverhead -rates "$RATES" -duration "$DUR" -concurrency "$CONC"
