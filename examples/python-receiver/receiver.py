#!/usr/bin/env python3
"""GitHub webhook receiver: the standard library's HTTP server and psycopg2.

Environment: PORT (default 8080), HOST (default 127.0.0.1), DATABASE_URL,
WEBHOOK_SECRET (the webhook's secret; never printed), PY_RECEIVER_DEFECT
(a planted bug, see README.md). The schema is created on start.
"""

import contextlib
import datetime
import hashlib
import hmac
import json
import logging
import os
import signal
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import psycopg2
import psycopg2.pool

# "Payloads are capped at 25 MB" (GitHub, webhook events and payloads).
MAX_BODY_BYTES = 25 * 1024 * 1024
POOL_SIZE = 4
DEFECTS = ("", "dedupe-after-commit")

SCHEMA = """
SELECT pg_advisory_xact_lock(4242);  -- two instances starting at once
CREATE TABLE IF NOT EXISTS deliveries (
    delivery_id text PRIMARY KEY,
    event       text NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now()
);
-- Keyed by node_id: an issue transferred to another repository keeps it,
-- while its number changes.
CREATE TABLE IF NOT EXISTS issues (
    node_id       text PRIMARY KEY,
    issue_id      bigint NOT NULL,
    repository_id bigint NOT NULL,
    number        integer NOT NULL,
    title         text NOT NULL,
    state         text NOT NULL CHECK (state IN ('open', 'closed')),
    updated_at    timestamptz NOT NULL
);
CREATE TABLE IF NOT EXISTS stars (
    id            bigserial PRIMARY KEY,
    delivery_id   text NOT NULL,
    action        text NOT NULL,
    repository_id bigint NOT NULL,
    repository    text NOT NULL,
    user_id       bigint NOT NULL,
    user_login    text NOT NULL,
    user_node_id  text,
    starred_at    timestamptz,
    received_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS stars_delivery_id ON stars (delivery_id);
"""

log = logging.getLogger("receiver")


class BadPayload(Exception):
    """The delivery is signed but its payload is not what GitHub sends."""


def _field(obj, key, kind):
    value = obj.get(key) if isinstance(obj, dict) else None
    # bool is an int in Python; GitHub's numeric IDs never are.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise BadPayload(f"{key}: missing or not a {kind.__name__}")
    return value


def _time(value, key):
    try:
        return datetime.datetime.fromisoformat(value)
    except (TypeError, ValueError):
        raise BadPayload(f"{key}: not an ISO 8601 time") from None


def star_change(payload):
    """star: one row per event (created or deleted), for stars over time."""
    action = _field(payload, "action", str)
    repo = _field(payload, "repository", dict)
    sender = _field(payload, "sender", dict)
    starred = payload.get("starred_at")
    row = (action, _field(repo, "id", int), _field(repo, "full_name", str),
           _field(sender, "id", int), _field(sender, "login", str), sender.get("node_id"),
           None if starred is None else _time(starred, "starred_at"))
    if action not in ("created", "deleted"):
        return None

    def apply(cur, delivery_id):
        cur.execute("INSERT INTO stars (delivery_id, action, repository_id, repository, user_id,"
                    " user_login, user_node_id, starred_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                    (delivery_id,) + row)
    return apply


def issues_change(payload):
    """issues: mirror the issue's state. GitHub does not promise delivery
    order, so an older copy of the issue (updated_at) never overwrites a newer one."""
    action = _field(payload, "action", str)
    issue = _field(payload, "issue", dict)
    repo = _field(payload, "repository", dict)
    state = _field(issue, "state", str)
    if state not in ("open", "closed"):
        raise BadPayload("issue.state: not open or closed")
    row = (_field(issue, "node_id", str), _field(issue, "id", int), _field(repo, "id", int),
           _field(issue, "number", int), _field(issue, "title", str), state,
           _time(_field(issue, "updated_at", str), "issue.updated_at"))
    if action not in ("opened", "closed", "reopened"):
        return None

    def apply(cur, delivery_id):
        # A tie (two changes in one second) goes to the later delivery.
        cur.execute("INSERT INTO issues (node_id, issue_id, repository_id, number, title, state, updated_at)"
                    " VALUES (%s, %s, %s, %s, %s, %s, %s)"
                    " ON CONFLICT (node_id) DO UPDATE SET repository_id = EXCLUDED.repository_id,"
                    " number = EXCLUDED.number, title = EXCLUDED.title,"
                    " state = EXCLUDED.state, updated_at = EXCLUDED.updated_at"
                    " WHERE issues.updated_at <= EXCLUDED.updated_at", row)
    return apply


# X-GitHub-Event → payload parser returning the change (None: recorded, no change).
# Any other event (ping included) is acknowledged and nothing is stored.
HANDLERS = {"star": star_change, "issues": issues_change}


def describe(e):
    """The error's class and first line (libpq's messages hold no password).
    A rollback on a connection the server dropped raises InterfaceError;
    the error that dropped it is more telling."""
    if isinstance(e, psycopg2.InterfaceError) and isinstance(e.__context__, psycopg2.Error):
        e = e.__context__
    return f"{type(e).__name__}: {(str(e).strip().splitlines() or [''])[0]}"


class Pool:
    """psycopg2's ThreadedConnectionPool raises when every connection is out;
    the semaphore makes a request wait for one instead."""

    def __init__(self, dsn, size):
        self._slots = threading.BoundedSemaphore(size)
        self._pool = psycopg2.pool.ThreadedConnectionPool(
            size, size, dsn, connect_timeout=5, application_name="python-receiver")

    @contextlib.contextmanager
    def connection(self):
        with self._slots:
            conn = self._pool.getconn()
            broken = False
            try:
                yield conn
            except (psycopg2.OperationalError, psycopg2.InterfaceError):
                broken = True
                raise
            finally:
                # A connection the server dropped is closed, not reused.
                self._pool.putconn(conn, close=broken or bool(conn.closed))

    def close(self):
        self._pool.closeall()


class Receiver:
    def __init__(self, dsn, secret, defect=""):
        if defect not in DEFECTS:
            raise ValueError(f"unknown defect {defect!r} (known: {', '.join(DEFECTS[1:])})")
        self.secret = secret.encode()
        self.defect = defect
        conn = psycopg2.connect(dsn, connect_timeout=5, application_name="python-receiver")
        try:
            with conn, conn.cursor() as cur:
                cur.execute(SCHEMA)
        finally:
            conn.close()
        self.pool = Pool(dsn, POOL_SIZE)

    def signature_ok(self, header, body):
        expected = b"sha256=" + hmac.new(self.secret, body, hashlib.sha256).hexdigest().encode()
        # Compared as bytes: compare_digest refuses non-ASCII str.
        return hmac.compare_digest(expected, (header or "").encode("latin-1"))

    def process(self, delivery_id, event, apply):
        """One transaction: the delivery row, and the change only if the row is new."""
        with self.pool.connection() as conn:
            if self.defect == "dedupe-after-commit":
                return self._process_defective(conn, delivery_id, event, apply)
            with conn, conn.cursor() as cur:
                cur.execute("INSERT INTO deliveries (delivery_id, event) VALUES (%s, %s)"
                            " ON CONFLICT DO NOTHING", (delivery_id, event))
                if cur.rowcount == 0:
                    return "duplicate"
                if apply is not None:
                    apply(cur, delivery_id)
            return "processed"

    def _process_defective(self, conn, delivery_id, event, apply):
        # The bug: check, apply and commit, then record the delivery on its own.
        # Copies that arrive together all pass the check; a crash between the
        # two commits leaves the change without its delivery row.
        with conn, conn.cursor() as cur:
            cur.execute("SELECT 1 FROM deliveries WHERE delivery_id = %s", (delivery_id,))
            if cur.fetchone():
                return "duplicate"
            if apply is not None:
                apply(cur, delivery_id)
        with conn, conn.cursor() as cur:
            cur.execute("INSERT INTO deliveries (delivery_id, event) VALUES (%s, %s)"
                        " ON CONFLICT DO NOTHING", (delivery_id, event))
        return "processed"


class Handler(BaseHTTPRequestHandler):
    server_version = "python-receiver"
    timeout = 30  # a stalled client does not hold a thread (or a graceful stop) forever

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
            self.reply(200, "ok")  # liveness only: no database round trip
        else:
            self.reply(404, "not found")

    def do_POST(self):
        if self.path != "/github":
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
        status, text = self.deliver(body)
        self.reply(status, text)

    def deliver(self, body):
        r = self.server.receiver
        if not r.signature_ok(self.headers.get("X-Hub-Signature-256"), body):
            return 401, "bad signature"
        delivery_id = (self.headers.get("X-GitHub-Delivery") or "").strip()
        event = (self.headers.get("X-GitHub-Event") or "").strip()
        if not delivery_id or len(delivery_id) > 255:
            return 400, "missing X-GitHub-Delivery"
        if not event:
            return 400, "missing X-GitHub-Event"
        try:
            payload = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            return 400, "malformed JSON"
        if not isinstance(payload, dict):
            return 400, "payload is not a JSON object"
        parse = HANDLERS.get(event)
        if parse is None:
            return 200, f"{event}: not handled"
        try:
            apply = parse(payload)
        except BadPayload as e:
            return 400, f"{event}: {e}"
        try:
            outcome = r.process(delivery_id, event, apply)
        except psycopg2.Error as e:
            # Not acknowledged: nothing was kept, so a redelivery is safe.
            log.error("delivery %s: %s", delivery_id, describe(e))
            return 500, "database error"
        return 200, outcome

    def discard(self, length):
        """After a 413, read (at most 2 s of) the body before closing: closing
        with unread data makes the kernel reset the connection, and the client
        may lose the 413 before it reads it."""
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


def main():
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(message)s")
    secret = os.environ.get("WEBHOOK_SECRET", "")
    dsn = os.environ.get("DATABASE_URL", "")
    if not secret or not dsn:
        log.error("WEBHOOK_SECRET and DATABASE_URL must be set")
        return 2
    try:
        receiver = Receiver(dsn, secret, os.environ.get("PY_RECEIVER_DEFECT", ""))
    except ValueError as e:
        log.error("PY_RECEIVER_DEFECT: %s", e)
        return 2
    except psycopg2.Error as e:
        log.error("database: %s", describe(e))
        return 1
    server = Server((os.environ.get("HOST", "127.0.0.1"), int(os.environ.get("PORT", "8080"))), Handler)
    server.receiver = receiver

    def stop(signum, _frame):
        log.info("%s: finishing in-flight requests", signal.Signals(signum).name)
        # shutdown() waits for serve_forever(), which runs in this (main) thread.
        threading.Thread(target=server.shutdown).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    log.info("listening on %s:%d%s", *server.server_address,
             f" (defect {receiver.defect})" if receiver.defect else "")
    server.serve_forever()
    server.server_close()  # joins the request threads
    receiver.pool.close()
    log.info("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
