#!/usr/bin/env python3
"""Stripe webhook receiver that refetches: every event's object is fetched
from Stripe's API and what the API answers is stored, never the event's body
(Stripe's advice against out-of-order events). The standard library's HTTP
server and psycopg2.

Environment: PORT (default 8080), HOST (default 127.0.0.1), DATABASE_URL,
STRIPE_WEBHOOK_SECRET (the endpoint's whsec_ secret), STRIPE_API_KEY (the
secret key sent to the API), STRIPE_API_BASE (default https://api.stripe.com),
REFETCH_RECEIVER_DEFECT (a planted bug, see README.md). Secrets are never
printed. The schema is created on start.
"""

import contextlib
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
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import psycopg2
import psycopg2.pool

MAX_BODY_BYTES = 1024 * 1024
# Stripe's libraries refuse a signed timestamp older than this by default.
TOLERANCE_S = 300
POOL_SIZE = 4
API_TIMEOUT_S = 10
DEFECTS = ("", "trust-event-body", "404-acked-lost", "no-refetch", "404-retry-forever")

SCHEMA = """
SELECT pg_advisory_xact_lock(4243);  -- two instances starting at once
CREATE TABLE IF NOT EXISTS stripe_events (
    event_id    text PRIMARY KEY,
    type        text NOT NULL,
    outcome     text NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now()
);
-- A customer as the API last showed it; a deleted one keeps its row as a
-- tombstone (deleted_at), so a late event for it is recognised.
CREATE TABLE IF NOT EXISTS customers (
    id         text PRIMARY KEY,
    email      text,
    version    bigint NOT NULL,
    deleted_at timestamptz,
    synced_at  timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS charges (
    id       text PRIMARY KEY,
    amount   bigint NOT NULL,
    currency text NOT NULL,
    status   text NOT NULL
);
-- One credit per charge.succeeded event.
CREATE TABLE IF NOT EXISTS ledger (
    event_id  text PRIMARY KEY REFERENCES stripe_events (event_id),
    charge_id text NOT NULL,
    amount    bigint NOT NULL
);
"""

# Event type → the API resource its object is fetched from.
RESOURCES = {"customer.updated": "customers", "customer.deleted": "customers", "charge.succeeded": "charges"}
DELETIONS = {"customer.deleted"}

log = logging.getLogger("refetch-receiver")


class BadEvent(Exception):
    """The event is signed but not shaped as Stripe sends it."""


class Retry(Exception):
    """The event cannot be applied now: answered non-2xx, Stripe retries it."""


def describe(e):
    """The error's class and first line (libpq's messages hold no password)."""
    if isinstance(e, psycopg2.InterfaceError) and isinstance(e.__context__, psycopg2.Error):
        e = e.__context__
    return f"{type(e).__name__}: {(str(e).strip().splitlines() or [''])[0]}"


def parse_event(body):
    try:
        event = json.loads(body)
    except ValueError as e:
        raise BadEvent(f"malformed JSON: {e}") from None
    if not isinstance(event, dict):
        raise BadEvent("not a JSON object")
    for field in ("id", "type"):
        if not isinstance(event.get(field), str) or not event[field]:
            raise BadEvent(f"{field}: missing")
    obj = (event.get("data") or {}).get("object") if isinstance(event.get("data"), dict) else None
    if event["type"] in RESOURCES and (not isinstance(obj, dict) or not isinstance(obj.get("id"), str)):
        raise BadEvent("data.object.id: missing")
    return event, obj


def version_of(obj):
    """The customer's version, kept in its metadata by the application."""
    try:
        return int((obj.get("metadata") or {}).get("version"))
    except (TypeError, ValueError):
        raise BadEvent("metadata.version: missing or not an integer") from None


class StripeAPI:
    """GET of one object; answers (status, object or None)."""

    def __init__(self, base, key):
        self.base = base.rstrip("/")
        self.auth = "Bearer " + key

    def get(self, resource, object_id):
        url = f"{self.base}/v1/{resource}/{urllib.parse.quote(object_id, safe='')}"
        req = urllib.request.Request(url, headers={"Authorization": self.auth, "Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=API_TIMEOUT_S) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as e:
            e.read()
            return e.code, None
        except (OSError, ValueError) as e:
            log.warning("GET /v1/%s/%s: %s", resource, object_id, type(e).__name__)
            return 0, None


class Pool:
    """A request waits for a connection instead of failing when all are out."""

    def __init__(self, dsn, size):
        self._slots = threading.BoundedSemaphore(size)
        self._pool = psycopg2.pool.ThreadedConnectionPool(size, size, dsn, connect_timeout=5,
                                                          application_name="refetch-receiver")

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
                self._pool.putconn(conn, close=broken or bool(conn.closed))

    def close(self):
        self._pool.closeall()


class Receiver:
    def __init__(self, dsn, secret, api, defect=""):
        if defect not in DEFECTS:
            raise ValueError(f"unknown defect {defect!r} (known: {', '.join(DEFECTS[1:])})")
        self.secret = secret.encode()
        self.api = api
        self.defect = defect
        conn = psycopg2.connect(dsn, connect_timeout=5, application_name="refetch-receiver")
        try:
            with conn, conn.cursor() as cur:
                cur.execute(SCHEMA)
        finally:
            conn.close()
        self.pool = Pool(dsn, POOL_SIZE)

    def signature_ok(self, header, body, now=None):
        """Stripe-Signature: t=<unix>,v1=<hex>[,v1=...]; HMAC-SHA256 of "t.body"
        keyed by the whole whsec_ secret."""
        if not header:
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
        if abs((now if now is not None else time.time()) - ts) > TOLERANCE_S:
            return False
        expected = hmac.new(self.secret, t.encode() + b"." + body, hashlib.sha256).hexdigest().encode()
        return any(hmac.compare_digest(expected, s) for s in signatures)

    def seen(self, event_id):
        with self.pool.connection() as conn, conn, conn.cursor() as cur:
            cur.execute("SELECT 1 FROM stripe_events WHERE event_id = %s", (event_id,))
            return cur.fetchone() is not None

    def refetch(self, event, body_obj):
        """The object to store: what the API answers. None: the API says the
        object does not exist (404)."""
        if self.defect == "no-refetch":
            # The bug: the API is never asked; the event's snapshot is stored.
            return body_obj
        resource = RESOURCES[event["type"]]
        status, obj = self.api.get(resource, body_obj["id"])
        if self.defect == "trust-event-body":
            # The bug: the API was asked, but the event's own snapshot is stored.
            return body_obj
        if status == 200 and isinstance(obj, dict):
            return obj
        if status == 404:
            return None
        # 429, 5xx, a timeout: not now. Stripe retries a non-2xx answer.
        raise Retry(f"the API answered {status or 'nothing'} for {resource}/{body_obj['id']}")

    def process(self, event, body_obj):
        if self.seen(event["id"]):
            return "duplicate"
        obj = self.refetch(event, body_obj)
        typ = event["type"]
        with self.pool.connection() as conn:
            with conn, conn.cursor() as cur:
                if obj is None and typ not in DELETIONS:
                    if self.defect == "404-retry-forever":
                        # The bug: a 404 is always "try again", even for a
                        # customer known to be deleted, so the provider
                        # retries the event until it disables the endpoint.
                        raise Retry(f"{body_obj['id']}: the API answered 404")
                    if self.defect == "404-acked-lost":
                        # The bug: any 404 is taken for a deletion and the
                        # event acknowledged, though nothing records one.
                        outcome = "object missing: dropped"
                    else:
                        # A 404 is a deletion only once the deletion is
                        # known; until then Stripe keeps the event coming.
                        cur.execute("SELECT 1 FROM customers WHERE id = %s AND deleted_at IS NOT NULL", (body_obj["id"],))
                        if cur.fetchone() is None:
                            raise Retry(f"{body_obj['id']}: the API answered 404 and no deletion is known yet")
                        outcome = "object deleted: nothing to apply"
                    cur.execute("INSERT INTO stripe_events (event_id, type, outcome) VALUES (%s, %s, %s)"
                                " ON CONFLICT DO NOTHING", (event["id"], typ, outcome))
                    return outcome if cur.rowcount else "duplicate"
                cur.execute("INSERT INTO stripe_events (event_id, type, outcome) VALUES (%s, %s, 'applied')"
                            " ON CONFLICT DO NOTHING", (event["id"], typ))
                if cur.rowcount == 0:
                    return "duplicate"
                if typ in DELETIONS:
                    # The deletion carries the version it deleted at; the row
                    # stays as a tombstone.
                    cur.execute("INSERT INTO customers (id, version, deleted_at) VALUES (%s, %s, now())"
                                " ON CONFLICT (id) DO UPDATE SET deleted_at = now(),"
                                " version = GREATEST(customers.version, EXCLUDED.version)",
                                (body_obj["id"], version_of(body_obj)))
                elif typ == "customer.updated":
                    # Concurrent refetches: the newest version wins; a deleted
                    # customer stays deleted.
                    cur.execute("INSERT INTO customers (id, email, version) VALUES (%s, %s, %s)"
                                " ON CONFLICT (id) DO UPDATE SET email = EXCLUDED.email, version = EXCLUDED.version,"
                                " synced_at = now()"
                                " WHERE customers.deleted_at IS NULL AND customers.version <= EXCLUDED.version",
                                (obj["id"], obj.get("email"), version_of(obj)))
                elif typ == "charge.succeeded":
                    cur.execute("INSERT INTO charges (id, amount, currency, status) VALUES (%s, %s, %s, %s)"
                                " ON CONFLICT (id) DO UPDATE SET amount = EXCLUDED.amount, status = EXCLUDED.status",
                                (obj["id"], int(obj.get("amount", 0)), str(obj.get("currency", "")), str(obj.get("status", ""))))
                    cur.execute("INSERT INTO ledger (event_id, charge_id, amount) VALUES (%s, %s, %s)",
                                (event["id"], obj["id"], int(obj.get("amount", 0))))
        return "applied"


class Handler(BaseHTTPRequestHandler):
    server_version = "refetch-receiver"
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
        if self.path != "/stripe/webhook":
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
        if not r.signature_ok(self.headers.get("Stripe-Signature"), body):
            return 400, "bad signature"
        try:
            event, body_obj = parse_event(body)
            if event["type"] not in RESOURCES:
                return 200, f"{event['type']}: not handled"
            return 200, r.process(event, body_obj)
        except BadEvent as e:
            return 400, str(e)
        except Retry as e:
            # Nothing was kept: Stripe's retry finds the event new.
            log.warning("event %s: %s", event["id"], e)
            return 503, "try again later"
        except psycopg2.Error as e:
            log.error("event %s: %s", event["id"], describe(e))
            return 500, "database error"

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


def main():
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(message)s")
    secret = os.environ.get("STRIPE_WEBHOOK_SECRET", "")
    key = os.environ.get("STRIPE_API_KEY", "")
    dsn = os.environ.get("DATABASE_URL", "")
    if not secret or not key or not dsn:
        log.error("STRIPE_WEBHOOK_SECRET, STRIPE_API_KEY and DATABASE_URL must be set")
        return 2
    api = StripeAPI(os.environ.get("STRIPE_API_BASE", "https://api.stripe.com"), key)
    try:
        receiver = Receiver(dsn, secret, api, os.environ.get("REFETCH_RECEIVER_DEFECT", ""))
    except ValueError as e:
        log.error("REFETCH_RECEIVER_DEFECT: %s", e)
        return 2
    except psycopg2.Error as e:
        log.error("database: %s", describe(e))
        return 1
    server = Server((os.environ.get("HOST", "127.0.0.1"), int(os.environ.get("PORT", "8080"))), Handler)
    server.receiver = receiver

    def stop(signum, _frame):
        log.info("%s: finishing in-flight requests", signal.Signals(signum).name)
        threading.Thread(target=server.shutdown).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    log.info("listening on %s:%d, API %s%s", *server.server_address, api.base,
             f" (defect {receiver.defect})" if receiver.defect else "")
    server.serve_forever()
    server.server_close()
    receiver.pool.close()
    log.info("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
