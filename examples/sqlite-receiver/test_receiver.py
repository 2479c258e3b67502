"""Tests over real HTTP and a real SQLite file, each in a directory of its
own; observe.py is run as hookcert runs it, a program per query.

    python3 -m unittest
"""

import datetime
import hashlib
import hmac
import http.client
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import receiver

HERE = os.path.dirname(os.path.abspath(__file__))
SECRETS = {"live": "whsec_live_test_secret", "test": "whsec_test_test_secret"}


def charge(event_id, charge_id="ch_1", amount=2000):
    return json.dumps({"id": event_id, "object": "event", "type": "charge.succeeded", "created": int(time.time()),
                       "data": {"object": {"id": charge_id, "object": "charge", "amount": amount, "currency": "usd"}}}).encode()


def sign(body, mode="live", t=None):
    t = str(int(time.time()) if t is None else t)
    sig = hmac.new(SECRETS[mode].encode(), t.encode() + b"." + body, hashlib.sha256).hexdigest()
    return f"t={t},v1={sig}"


class ReceiverTest(unittest.TestCase):
    defect = ""

    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.db = os.path.join(tmp.name, "shop.db")
        receiver.init_db(self.db, self.defect, fresh=True)
        self.server = receiver.Server(("127.0.0.1", 0), receiver.Handler)
        self.server.receiver = receiver.Receiver(self.db, SECRETS, self.defect)
        t = threading.Thread(target=self.server.serve_forever, args=(0.05,))
        t.start()
        self.addCleanup(self.server.server_close)
        self.addCleanup(self.server.shutdown)

    def post(self, body, mode="live", signature=None):
        conn = http.client.HTTPConnection(*self.server.server_address, timeout=10)
        try:
            headers = {"Content-Type": "application/json",
                       "Stripe-Signature": sign(body, mode) if signature is None else signature}
            conn.request("POST", "/webhooks/stripe/" + mode, body=body, headers=headers)
            resp = conn.getresponse()
            return resp.status, resp.read().decode().strip()
        finally:
            conn.close()

    def observe(self, *args, db=None):
        """observe.py's answer, as hookcert reads it (stdout, one JSON value)."""
        out = subprocess.run([sys.executable, os.path.join(HERE, "observe.py"), *args], capture_output=True, text=True,
                             env={**os.environ, "SQLITE_RECEIVER_DB": db or self.db}, cwd=HERE, timeout=10)
        self.assertEqual(out.returncode, 0, out.stderr)
        return json.loads(out.stdout)

    def counts(self, source, event_id):
        return (self.observe("event_rows", source, event_id)["count"],
                self.observe("effects", source, event_id)["count"])


class CorrectReceiver(ReceiverTest):
    def test_applies_once(self):
        body = charge("evt_1")
        self.assertEqual(self.post(body), (200, "processed"))
        self.assertEqual(self.post(body), (200, "duplicate"))
        self.assertEqual(self.counts("live", "evt_1"), (1, 1))
        self.assertEqual(self.observe("payload_present", "live", "evt_1"), [[True]])

    def test_source_is_part_of_the_key(self):
        self.assertEqual(self.post(charge("evt_2"), "live")[0], 200)
        self.assertEqual(self.post(charge("evt_2"), "test")[0], 200)
        self.assertEqual(self.counts("live", "evt_2"), (1, 1))
        self.assertEqual(self.counts("test", "evt_2"), (1, 1))

    def test_refused_deliveries_leave_nothing(self):
        body = charge("evt_3")
        self.assertEqual(self.post(body, signature=sign(body, "test"))[0], 400)  # the other endpoint's secret
        self.assertEqual(self.post(body, signature=sign(body, t=int(time.time()) - 301))[0], 400)  # stale
        self.assertEqual(self.post(body, signature="")[0], 400)
        self.assertEqual(self.post(b'{"id": "evt_3", "type": ')[0], 400)
        self.assertEqual(self.post(b'{"type": "charge.succeeded"}')[0], 400)
        self.assertEqual(self.counts("live", "evt_3"), (0, 0))
        self.assertIsNone(self.observe("payload_present", "live", "evt_3"))
        # Inside the tolerance, and a minute ahead of the receiver's clock.
        self.assertEqual(self.post(body, signature=sign(body, t=int(time.time()) + 60))[0], 200)

    def test_other_types_recorded_without_effect(self):
        body = json.dumps({"id": "evt_4", "type": "invoice.upcoming", "data": {"object": {"id": "in_1"}}}).encode()
        self.assertEqual(self.post(body), (200, "recorded"))
        self.assertEqual(self.counts("live", "evt_4"), (1, 0))

    def test_concurrent_copies_apply_once(self):
        body = charge("evt_5")
        results = []
        threads = [threading.Thread(target=lambda: results.append(self.post(body)[0])) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(results, [200] * 8)
        self.assertEqual(self.counts("live", "evt_5"), (1, 1))

    def test_purge(self):
        self.assertEqual(self.post(charge("evt_6"))[0], 200)
        now = datetime.datetime.now(datetime.timezone.utc)
        receiver.purge(self.db, now + datetime.timedelta(days=8))
        self.assertEqual(self.observe("payload_present", "live", "evt_6"), [[False]])
        self.assertEqual(self.post(charge("evt_6")), (200, "duplicate"))
        receiver.purge(self.db, now + datetime.timedelta(days=29))
        self.assertEqual(self.counts("live", "evt_6"), (1, 1))
        receiver.purge(self.db, now + datetime.timedelta(days=31))
        self.assertIsNone(self.observe("payload_present", "live", "evt_6"))
        self.assertEqual(self.counts("live", "evt_6"), (0, 1))  # the ledger stays

    def test_observe_errors(self):
        self.assertEqual(self.observe("capabilities"), {"queries": ["event_rows", "effects", "payload_present"]})
        for args, db, want in [(("event_rows", "live", "evt_1"), "/nonexistent/shop.db", "no database at /nonexistent/shop.db"),
                               (("key_ttl", "live", "evt_1"), self.db, "unknown query 'key_ttl'")]:
            out = subprocess.run([sys.executable, os.path.join(HERE, "observe.py"), *args], capture_output=True, text=True,
                                 env={**os.environ, "SQLITE_RECEIVER_DB": db}, timeout=10)
            self.assertEqual(out.returncode, 1)
            self.assertIn(want, out.stderr)
            self.assertEqual(out.stdout, "")


class NoDedupDefect(ReceiverTest):
    defect = "no-dedup"

    def test_every_copy_applies(self):
        body = charge("evt_1")
        self.assertEqual(self.post(body), (200, "processed"))
        self.assertEqual(self.post(body), (200, "processed"))
        self.assertEqual(self.counts("live", "evt_1"), (2, 2))
        self.assertEqual(self.observe("payload_present", "live", "evt_1"), [[True], [True]])


if __name__ == "__main__":
    unittest.main()
