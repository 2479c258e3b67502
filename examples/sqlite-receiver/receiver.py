#!/usr/bin/env python3
"""Stripe webhook receiver on SQLite: the standard library only (http.server,
sqlite3, hmac).

    python3 receiver.py init-db [--fresh]    create the database (--fresh: delete it first)
    python3 receiver.py serve                serve POST /webhooks/stripe/<mode>
    python3 receiver.py purge --as-of TIME   retention, as if the clock read TIME (RFC 3339)

Environment: SQLITE_RECEIVER_DB (the database file, required), PORT (default
8080), HOST (default 127.0.0.1), STRIPE_WEBHOOK_SECRET_LIVE and
STRIPE_WEBHOOK_SECRET_TEST (the endpoints' signing secrets; an endpoint
without one is not served; never printed), SQLITE_RECEIVER_DEFECT (a planted
bug, see README.md).
"""

import argparse
import datetime
import hashlib
import hmac
import json
import logging
import os
import signal
import socket
import sqlite3
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# Stripe documents no size cap; 1 MiB is far above any event it sends.
MAX_BODY_BYTES = 1024 * 1024
# stripe-go's DefaultTolerance: a signature older than this is a replay.
TOLERANCE_S = 300
# Concurrent deliveries wait for SQLite's one writer this long.
BUSY_TIMEOUT_S = 10
# Stripe retries for 3 days and its CLI resends events up to 30 days old: an
# event ID is kept that long. The payload is for debugging, kept a week.
KEY_TTL = datetime.timedelta(days=30)
PAYLOAD_TTL = datetime.timedelta(days=7)
MODES = ("live", "test")
DEFECTS = ("", "no-dedup")

# The event key (source, event_id) is UNIQUE: a redelivery cannot be applied
# twice, whatever the timing. The ledger row is written in the same
# transaction as the key.
SCHEMA = """
CREATE TABLE IF NOT EXISTS stripe_events (
    id          INTEGER PRIMARY KEY,
    source      TEXT NOT NULL,
    event_id    TEXT NOT NULL,
    type        TEXT NOT NULL,
    payload     TEXT,
    received_at REAL NOT NULL,
    UNIQUE (source, event_id)
);
CREATE TABLE IF NOT EXISTS ledger (
    id         INTEGER PRIMARY KEY,
    source     TEXT NOT NULL,
    event_id   TEXT NOT NULL,
    charge_id  TEXT NOT NULL,
    amount     INTEGER NOT NULL,
    currency   TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS ledger_event ON ledger (source, event_id);
"""

# The defect's schema: no unique key, so nothing stops a second copy.
SCHEMA_NO_DEDUP = SCHEMA.replace(",\n    UNIQUE (source, event_id)", "").replace(
    "CREATE TABLE IF NOT EXISTS ledger",
    "CREATE INDEX IF NOT EXISTS stripe_events_key ON stripe_events (source, event_id);\n"
    "CREATE TABLE IF NOT EXISTS ledger")

log = logging.getLogger("receiver")


def connect(path):
    """A connection of our own per request: sqlite3 connections are not
    shared between threads. isolation_level=None: transactions are ours."""
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    # FULL: a commit is on disk before the 200 goes out.
    conn.execute("PRAGMA synchronous=FULL")
    return conn


def init_db(path, defect, fresh=False):
    if fresh:
        for suffix in ("", "-wal", "-shm"):
            try:
                os.remove(path + suffix)
            except FileNotFoundError:
                pass
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    conn = connect(path)
    try:
        # WAL: readers (the reports, observe.py) never block the writer.
        conn.execute("PRAGMA journal_mode=WAL")
        conn.executescript(SCHEMA_NO_DEDUP if defect == "no-dedup" else SCHEMA)
    finally:
        conn.close()


class BadEvent(Exception):
    """Signed, but not an event this receiver can store."""


def parse_event(body):
    try:
        event = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise BadEvent("malformed JSON") from None
    if not isinstance(event, dict):
        raise BadEvent("not a JSON object")
    event_id, typ = event.get("id"), event.get("type")
    if not isinstance(event_id, str) or not event_id or len(event_id) > 255:
        raise BadEvent("no event id")
    if not isinstance(typ, str) or not typ:
        raise BadEvent("no event type")
    return event


def charge_row(event):
    """charge.succeeded: one ledger row, from data.object."""
    obj = (event.get("data") or {}).get("object")
    if not isinstance(obj, dict):
        raise BadEvent("charge.succeeded without data.object")
    charge_id, amount, currency = obj.get("id"), obj.get("amount"), obj.get("currency")
    if not isinstance(charge_id, str) or not isinstance(currency, str) or \
            not isinstance(amount, int) or isinstance(amount, bool):
        raise BadEvent("charge.succeeded: id, amount or currency missing")
    return charge_id, amount, currency


class Receiver:
    def __init__(self, path, secrets, defect=""):
        if defect not in DEFECTS:
            raise ValueError(f"unknown defect {defect!r} (known: {', '.join(DEFECTS[1:])})")
        self.path = path
        self.secrets = {mode: s.encode() for mode, s in secrets.items() if s}
        self.defect = defect
        init_db(path, defect)

    def signature_ok(self, mode, header, body, now=None):
        """Stripe-Signature: t=<unix>,v1=<hex>[,v1=...]; HMAC-SHA256 of
        "t.body" keyed by the whole whsec_ secret."""
        secret = self.secrets.get(mode)
        if secret is None or not header:
            return False
        t, signatures = None, []
        for part in header.split(","):
            k, _, v = part.strip().partition("=")
            if k == "t":
                t = v
            elif k == "v1":
                signatures.append(v.encode("latin-1", "replace"))
        try:
            ts = int(t)
        except (TypeError, ValueError):
            return False
        if (now if now is not None else time.time()) - ts > TOLERANCE_S:
            return False
        expected = hmac.new(secret, t.encode() + b"." + body, hashlib.sha256).hexdigest().encode()
        # Every signature is compared: while a secret rolls, Stripe signs with both.
        return any(hmac.compare_digest(expected, s) for s in signatures)

    def store(self, source, event, body):
        """One transaction: the event key and, for a new event, its ledger row.
        BEGIN IMMEDIATE takes SQLite's write lock first, so concurrent copies
        queue (busy timeout) instead of failing their commit."""
        row = charge_row(event) if event["type"] == "charge.succeeded" else None
        conn = connect(self.path)
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                insert = "INSERT INTO stripe_events (source, event_id, type, payload, received_at) VALUES (?, ?, ?, ?, ?)"
                if self.defect != "no-dedup":
                    insert += " ON CONFLICT (source, event_id) DO NOTHING"
                cur = conn.execute(insert, (source, event["id"], event["type"], body.decode(), time.time()))
                if cur.rowcount == 0:
                    conn.execute("ROLLBACK")
                    return "duplicate"
                if row is not None:
                    conn.execute("INSERT INTO ledger (source, event_id, charge_id, amount, currency, created_at)"
                                 " VALUES (?, ?, ?, ?, ?, ?)", (source, event["id"]) + row + (time.time(),))
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            return "processed" if row is not None else "recorded"
        finally:
            conn.close()


def purge(path, as_of):
    """Deletes the keys received before as_of - KEY_TTL and clears the
    payloads received before as_of - PAYLOAD_TTL; the ledger stays."""
    conn = connect(path)
    try:
        conn.execute("BEGIN IMMEDIATE")
        keys = conn.execute("DELETE FROM stripe_events WHERE received_at < ?",
                            ((as_of - KEY_TTL).timestamp(),)).rowcount
        payloads = conn.execute("UPDATE stripe_events SET payload = NULL WHERE payload IS NOT NULL AND received_at < ?",
                                ((as_of - PAYLOAD_TTL).timestamp(),)).rowcount
        conn.execute("COMMIT")
        return keys, payloads
    finally:
        conn.close()


class Handler(BaseHTTPRequestHandler):
    server_version = "sqlite-receiver"
    timeout = 30  # a stalled client does not hold a thread forever

    def log_message(self, fmt, *args):
        log.info("%s %s", self.address_string(), fmt % args)

    def reply(self, status, text, close=False):
        data = (text + "\n").encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        if close:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/healthz":
            self.reply(200, "ok")
        else:
            self.reply(404, "not found")

    def do_POST(self):
        prefix = "/webhooks/stripe/"
        mode = self.path[len(prefix):] if self.path.startswith(prefix) else None
        if mode not in self.server.receiver.secrets:
            return self.reply(404, "not found")
        try:
            length = int(self.headers.get("Content-Length", ""))
            if length < 0:
                raise ValueError
        except ValueError:
            return self.reply(411, "Content-Length required")
        if length > MAX_BODY_BYTES:
            self.reply(413, "payload too large", close=True)
            return self.discard(length)
        body = self.rfile.read(length)
        if len(body) != length:
            return self.reply(400, "body shorter than Content-Length")
        status, text = self.deliver(mode, body)
        self.reply(status, text)

    def deliver(self, mode, body):
        r = self.server.receiver
        if not r.signature_ok(mode, self.headers.get("Stripe-Signature"), body):
            return 400, "bad signature"  # what Stripe's libraries answer
        try:
            event = parse_event(body)
            outcome = r.store(mode, event, body)
        except BadEvent as e:
            return 400, str(e)
        except sqlite3.Error as e:
            # Not acknowledged: nothing was kept, so Stripe's retry is safe.
            log.error("event from %s: %s: %s", mode, type(e).__name__, e)
            return 500, "database error"
        return 200, outcome

    def discard(self, length):
        """After a 413, read (at most 2 s of) the body before closing, so the
        client reads the 413 instead of a connection reset."""
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_WR)
            self.connection.settimeout(0.5)
            deadline = time.monotonic() + 2
            while length > 0 and time.monotonic() < deadline:
                chunk = self.rfile.read1(min(length, 1 << 16))
                if not chunk:
                    break
                length -= len(chunk)
        except OSError:
            pass
        self.close_connection = True


class Server(ThreadingHTTPServer):
    daemon_threads = False  # server_close() waits for in-flight requests
    request_queue_size = 128  # the default backlog (5) drops connections in a burst


def serve(path, defect):
    secrets = {mode: os.environ.get("STRIPE_WEBHOOK_SECRET_" + mode.upper(), "") for mode in MODES}
    if not any(secrets.values()):
        log.error("set STRIPE_WEBHOOK_SECRET_LIVE or STRIPE_WEBHOOK_SECRET_TEST")
        return 2
    receiver = Receiver(path, secrets, defect)
    server = Server((os.environ.get("HOST", "127.0.0.1"), int(os.environ.get("PORT", "8080"))), Handler)
    server.receiver = receiver

    def stop(signum, _frame):
        log.info("%s: finishing in-flight requests", signal.Signals(signum).name)
        threading.Thread(target=server.shutdown).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    log.info("listening on %s:%d for %s%s", *server.server_address, ", ".join(sorted(receiver.secrets)),
             f" (defect {defect})" if defect else "")
    server.serve_forever()
    server.server_close()
    log.info("stopped")
    return 0


def main(argv=None):
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(message)s")
    p = argparse.ArgumentParser(prog="receiver.py")
    sub = p.add_subparsers(dest="command")
    init = sub.add_parser("init-db")
    init.add_argument("--fresh", action="store_true", help="delete the database first")
    sub.add_parser("serve")
    pp = sub.add_parser("purge")
    pp.add_argument("--as-of", required=True, help="RFC 3339 time the retention is computed from")
    args = p.parse_args(argv)
    path = os.environ.get("SQLITE_RECEIVER_DB", "")
    defect = os.environ.get("SQLITE_RECEIVER_DEFECT", "")
    if not path:
        log.error("SQLITE_RECEIVER_DB must be set")
        return 2
    if defect not in DEFECTS:
        log.error("SQLITE_RECEIVER_DEFECT: unknown defect %r (known: %s)", defect, ", ".join(DEFECTS[1:]))
        return 2
    try:
        if args.command == "init-db":
            init_db(path, defect, fresh=args.fresh)
            log.info("database %s ready", path)
            return 0
        if args.command == "purge":
            as_of = datetime.datetime.fromisoformat(args.as_of.replace("Z", "+00:00"))
            if as_of.tzinfo is None:
                log.error("--as-of: %s has no time zone", args.as_of)
                return 2
            keys, payloads = purge(path, as_of)
            log.info("purged as of %s: %d keys deleted, %d payloads cleared", as_of.isoformat(), keys, payloads)
            return 0
        return serve(path, defect)
    except sqlite3.Error as e:
        log.error("database %s: %s: %s", path, type(e).__name__, e)
        return 1


if __name__ == "__main__":
    sys.exit(main())
