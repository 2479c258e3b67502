#!/usr/bin/env bash
# Reference receiver beside pgbench: deliveries/s of signed cash credits over
# loopback HTTP against pgbench -M prepared running the reference's own credit
# transaction (store.CreditSQL: key insert ON CONFLICT, ledger entry and balance
# update in one statement) on the same fresh database, at each client count,
# rounds rotating with the floor (the same loader and HTTP server, a handler that
# runs only the statement), medians and ratios printed (target >= 0.9x at 8 and
# 32 clients). The database is created on $HOOKCERT_DATABASE_URL's server and
# dropped afterwards.
# Usage: reference/benchmark/pgbench.sh [clients, default 1,8,32] [rounds, default 3]
#        [round duration, default 4s]
set -euo pipefail
CLIENTS=${1:-1,8,32}
ROUNDS=${2:-3}
DUR=${3:-4s}
cd "$(dirname "$0")/../.."
PGBENCH=$(command -v pgbench || echo /usr/bin/pgbench)
exec go run ./reference/benchmark/pgbench -clients "$CLIENTS" -rounds "$ROUNDS" -duration "$DUR" -pgbench "$PGBENCH"
