"""Tests against a real PostgreSQL server (PY_RECEIVER_TEST_DATABASE_URL, default
the local server), each on a database of its own, over real HTTP.

    python3 -m unittest
"""

import hashlib
import hmac
import http.client
import json
import os
import threading
import time
import unittest
import uuid

import psycopg2
from psycopg2.extensions import make_dsn, parse_dsn

import receiver

SERVER = os.environ.get("PY_RECEIVER_TEST_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")
SECRET = "test-secret"
STAR = {"action": "created", "starred_at": "2024-05-06T09:12:44Z",
        "repository": {"id": 1296269, "full_name": "octocat/Hello-World"},
        "sender": {"login": "monalisa", "id": 7, "node_id": "U_kgDOAAAABw", "type": "User"}}


def admin(sql):
    conn = psycopg2.connect(SERVER)
    try:
        conn.autocommit = True
        conn.cursor().execute(sql)
    finally:
        conn.close()


class ReceiverTest(unittest.TestCase):
    defect = ""

    def setUp(self):
        name = "pyrecv_" + uuid.uuid4().hex[:12]
        admin(f"CREATE DATABASE {name}")
        self.addCleanup(self.drop, name)
        self.dsn = make_dsn(**{**parse_dsn(SERVER), "dbname": name})
        self.db = psycopg2.connect(self.dsn)
        self.db.autocommit = True
        self.addCleanup(self.db.close)
        r = receiver.Receiver(self.dsn, SECRET, self.defect)
        self.server = receiver.Server(("127.0.0.1", 0), receiver.Handler)
        self.server.receiver = r
        t = threading.Thread(target=self.server.serve_forever, args=(0.05,))
        t.start()
        self.addCleanup(r.pool.close)
        self.addCleanup(self.server.server_close)
        self.addCleanup(self.server.shutdown)

    @staticmethod
    def drop(name):
        admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def post(self, payload, delivery, event="star", secret=SECRET):
        body = json.dumps(payload).encode() if not isinstance(payload, bytes) else payload
        sig = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        c = http.client.HTTPConnection(*self.server.server_address, timeout=10)
        try:
            c.request("POST", "/github", body, {"Content-Type": "application/json", "X-GitHub-Event": event,
                                                "X-GitHub-Delivery": delivery, "X-Hub-Signature-256": sig})
            return c.getresponse().status
        finally:
            c.close()

    def count(self, sql, *args):
        with self.db.cursor() as cur:
            cur.execute(sql, args)
            return cur.fetchone()[0]

    def stored(self, delivery):
        return (self.count("SELECT count(*) FROM deliveries WHERE delivery_id = %s", delivery),
                self.count("SELECT count(*) FROM stars WHERE delivery_id = %s", delivery))

    def send_copies(self, delivery, n):
        """n copies at once, held at the deliveries insert until all have sent."""
        statuses = []
        gate = psycopg2.connect(self.dsn)
        try:
            gate.cursor().execute("LOCK TABLE deliveries IN SHARE MODE")
            threads = [threading.Thread(target=lambda: statuses.append(self.post(STAR, delivery)))
                       for _ in range(n)]
            for t in threads:
                t.start()
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and self.count(
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'python-receiver'"
                    " AND wait_event_type = 'Lock'") < n:
                time.sleep(0.02)
        finally:
            gate.close()  # releases the lock
        for t in threads:
            t.join()
        return statuses


class Correct(ReceiverTest):
    def test_signature(self):
        self.assertEqual(self.post(STAR, "d-bad", secret="wrong"), 401)
        self.assertEqual(self.post(b"{not json", "d-json"), 400)
        self.assertEqual(self.post(STAR, ""), 400)
        self.assertEqual(self.stored("d-bad") + self.stored("d-json"), (0, 0, 0, 0))
        self.assertEqual(self.post(STAR, "d-good"), 200)
        self.assertEqual(self.stored("d-good"), (1, 1))

    def test_duplicate(self):
        self.assertEqual(self.post(STAR, "d-1"), 200)
        self.assertEqual(self.post(STAR, "d-1"), 200)
        self.assertEqual(self.send_copies("d-2", 4), [200] * 4)
        self.assertEqual(self.stored("d-1") + self.stored("d-2"), (1, 1, 1, 1))
        self.assertEqual(self.post({"zen": "Design for failure.", "hook_id": 1}, "d-ping", "ping"), 200)
        self.assertEqual(self.count("SELECT count(*) FROM deliveries WHERE delivery_id = 'd-ping'"), 0)

    def test_transaction(self):
        # The change fails after the delivery row: neither is kept, so the
        # redelivery is applied.
        self.db.cursor().execute(
            "CREATE FUNCTION fail() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RAISE 'refused'; END$$;"
            "CREATE TRIGGER fail BEFORE INSERT ON stars FOR EACH ROW EXECUTE FUNCTION fail()")
        self.assertEqual(self.post(STAR, "d-tx"), 500)
        self.assertEqual(self.stored("d-tx"), (0, 0))
        self.db.cursor().execute("DROP TRIGGER fail ON stars")
        self.assertEqual(self.post(STAR, "d-tx"), 200)
        self.assertEqual(self.stored("d-tx"), (1, 1))

    def test_issue_state(self):
        issue = {"number": 1347, "id": 1, "node_id": "I_kwDOABII585", "title": "Found a bug", "state": "open",
                 "updated_at": "2024-05-06T10:00:00Z"}
        repo = {"id": 1296269, "full_name": "octocat/Hello-World"}
        closed = {**issue, "state": "closed", "updated_at": "2024-05-06T11:00:00Z"}
        self.assertEqual(self.post({"action": "closed", "issue": closed, "repository": repo}, "i-2", "issues"), 200)
        # The older opened, delivered late, does not reopen it.
        self.assertEqual(self.post({"action": "opened", "issue": issue, "repository": repo}, "i-1", "issues"), 200)
        self.assertEqual(self.count("SELECT state FROM issues WHERE node_id = 'I_kwDOABII585'"), "closed")


class DedupeAfterCommit(ReceiverTest):
    defect = "dedupe-after-commit"

    def test_copies_applied_twice(self):
        self.assertEqual(self.post(STAR, "d-1"), 200)
        self.assertEqual(self.post(STAR, "d-1"), 200)
        self.assertEqual(self.stored("d-1"), (1, 1))  # one at a time, deduplicated
        self.send_copies("d-2", 4)
        self.assertEqual(self.stored("d-2"), (1, 4))  # together, each applied


if __name__ == "__main__":
    unittest.main()
