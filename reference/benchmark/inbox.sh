#!/usr/bin/env bash
# Inbox drain rate: a backlog of signed cash credits accepted by the reference in
# inbox mode with no workers, then drained by workers on the same database, timed
# until nothing is pending or claimed. A fresh database on
# $HOOKCERT_DATABASE_URL's server, dropped afterwards.
# Usage: reference/benchmark/inbox.sh [events, default 4000] [workers, default 4]
set -euo pipefail
EVENTS=${1:-4000}
WORKERS=${2:-4}
cd "$(dirname "$0")/../.."
exec go run ./reference/benchmark/inbox -events "$EVENTS" -workers "$WORKERS"
