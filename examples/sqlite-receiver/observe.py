#!/usr/bin/env python3
"""hookcert's observer for the SQLite receiver (target.observe.command).

    python3 observe.py capabilities
    python3 observe.py QUERY SOURCE EVENT_ID

Opens the receiver's database (SQLITE_RECEIVER_DB) read-only and prints one
JSON value: the answer to one of hookcert's queries. hookcert also writes the
query as a JSON object on stdin; the arguments say the same, so it is not read.
An error goes to stderr with exit status 1: hookcert quotes its last lines.
"""

import json
import os
import sqlite3
import sys

# What this program answers; hookcert reads the list at start.
QUERIES = ("event_rows", "effects", "payload_present")


def connect(path):
    if not os.path.exists(path):
        # sqlite3 would create an empty database; mode=ro refuses, but with a
        # message that does not say which file.
        raise SystemExit(f"observe.py: no database at {path} (run `python3 receiver.py init-db`)")
    # mode=ro: this program never writes. The receiver's WAL files stay
    # readable; a busy timeout rides out a checkpoint.
    uri = "file:" + os.path.abspath(path) + "?mode=ro"
    return sqlite3.connect(uri, uri=True, timeout=5)


def answer(conn, query, source, event_id):
    if query == "event_rows":
        (n,) = conn.execute("SELECT count(*) FROM stripe_events WHERE source = ? AND event_id = ?",
                            (source, event_id)).fetchone()
        return {"count": n}
    if query == "effects":
        (n,) = conn.execute("SELECT count(*) FROM ledger WHERE source = ? AND event_id = ?",
                            (source, event_id)).fetchone()
        return {"count": n}
    if query == "payload_present":
        # No row once the key is purged; every row when a defect kept several
        # (hookcert then reports the key as ambiguous).
        rows = conn.execute("SELECT payload IS NOT NULL FROM stripe_events WHERE source = ? AND event_id = ?",
                            (source, event_id)).fetchall()
        if not rows:
            return None
        return [[bool(present)] for (present,) in rows]
    raise SystemExit(f"observe.py: unknown query {query!r} (known: {', '.join(QUERIES)})")


def main(argv):
    if argv[:1] == ["capabilities"]:
        print(json.dumps({"queries": list(QUERIES)}))
        return 0
    if len(argv) != 3:
        print("usage: observe.py capabilities | observe.py QUERY SOURCE EVENT_ID", file=sys.stderr)
        return 2
    path = os.environ.get("SQLITE_RECEIVER_DB", "")
    if not path:
        print("observe.py: SQLITE_RECEIVER_DB must be set", file=sys.stderr)
        return 2
    conn = connect(path)
    try:
        print(json.dumps(answer(conn, *argv)))
    finally:
        conn.close()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except sqlite3.Error as e:
        print(f"observe.py: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
