#!/usr/bin/env bash
# The machine's durable-commit ceiling, measured now: pg_test_fsync's fdatasync
# rate (one 8 kB write flushed at a time, on the filesystem of PostgreSQL's data
# directory when it is readable, else of /tmp) and pgbench committing the
# smallest durable transaction at 1 and 32 clients: distinct rows (group commit
# across sessions) and one hot row (each commit holds the row lock through its
# flush, as every credit to one account's balance does). The database is
# created on $HOOKCERT_DATABASE_URL's server and dropped afterwards.
# Usage: bench/ceiling.sh [seconds per measurement, default 3]
set -euo pipefail
SECS=${1:-3}
URL=${HOOKCERT_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}
PGBIN=/usr/lib/postgresql/15/bin
PGBENCH=$(command -v pgbench || echo "$PGBIN/pgbench")
TEST_FSYNC=$(command -v pg_test_fsync || echo "$PGBIN/pg_test_fsync")

DATA=$(psql "$URL" -Atc 'SHOW data_directory' 2>/dev/null || true)
DIR=/tmp
[ -n "$DATA" ] && [ -w "$DATA" ] && DIR=$DATA
if [ -x "$TEST_FSYNC" ]; then
	F=$(mktemp "$DIR/hookcert_fsync.XXXXXX")
	out=$("$TEST_FSYNC" -s "$SECS" -f "$F" 2>&1 || true)
	rm -f "$F"
	fsync=$(echo "$out" | awk '/one 8kB write/ {f=1} f && $1 == "fdatasync" {print int($2); exit}')
	echo "pg_test_fsync on $DIR: fdatasync of one 8 kB write: ${fsync:-?} ops/s (wal_sync_method: $(psql "$URL" -Atc 'SHOW wal_sync_method' 2>/dev/null || echo ?))"
	echo "summary: commit ceiling, one flush at a time|${fsync:-?} fdatasync/s (pg_test_fsync, $DIR)|-|-|-"
else
	echo "pg_test_fsync not found (Debian: apt-get install -y postgresql-15, $PGBIN); skipped"
	echo "summary: commit ceiling, one flush at a time|skipped: pg_test_fsync missing|-|-|-"
fi

DB=hookcert_ceiling_$$
psql "$URL" -qc "CREATE DATABASE $DB" >/dev/null
trap 'psql "$URL" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true; rm -f "${T:-}"' EXIT
DBURL=$(echo "$URL" | sed -E "s#/[^/?]*(\?|$)#/$DB\1#")
psql "$DBURL" -qc "CREATE TABLE c (k bigint PRIMARY KEY, n bigint NOT NULL DEFAULT 0); INSERT INTO c VALUES (0, 0)" >/dev/null
T=$(mktemp)
tps() { # clients script
	"$PGBENCH" -n -M prepared -c "$1" -j "$(( $1 < 2 ? $1 : 2 ))" -T "$SECS" -f "$2" "$DBURL" 2>&1 |
		sed -nE 's/^tps = ([0-9.]+) \(without initial connection time\)/\1/p' | cut -d. -f1
}
echo "INSERT INTO c (k) VALUES (nextval('s')) ;" >"$T"
psql "$DBURL" -qc "CREATE SEQUENCE s START 1" >/dev/null
d1=$(tps 1 "$T"); d32=$(tps 32 "$T")
echo "UPDATE c SET n = n + 1 WHERE k = 0 ;" >"$T"
h1=$(tps 1 "$T"); h32=$(tps 32 "$T")
echo "pgbench, smallest durable transaction, ${SECS}s each: distinct rows ${d1}/s at 1 client, ${d32}/s at 32 (group commit); one hot row ${h1}/s at 1, ${h32}/s at 32"
echo "summary: commit ceiling, distinct rows (group commit)|${d1}/s at 1 client, ${d32}/s at 32|-|-|-"
echo "summary: commit ceiling, one hot row|${h1}/s at 1 client, ${h32}/s at 32|-|-|-"
