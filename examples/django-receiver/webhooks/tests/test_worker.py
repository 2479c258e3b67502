from datetime import timedelta

from django.core.management import call_command
from django.db import connection, connections
from django.test import TransactionTestCase, override_settings
from django.utils import timezone

from billing.models import Customer, Invoice, LedgerEntry, Wallet
from webhooks.models import InboxEvent
from webhooks.worker import Options, Worker

from .helpers import ENDPOINTS, credit, envelope, post

FAST = Options(lease=1, max_attempts=3, backoff=0.01, backoff_max=0.02, poll_interval=0.01)


def drain(worker, rounds=50):
    """Claim and process until nothing is due (waiting out short backoffs)."""
    for _ in range(rounds):
        task = worker.claim()
        if task is None:
            if not InboxEvent.objects.filter(status=InboxEvent.QUEUED).exists():
                return
            InboxEvent.objects.filter(status=InboxEvent.QUEUED).update(available_at=timezone.now())
            continue
        worker.process(task)


@override_settings(WEBHOOK_ENDPOINTS=ENDPOINTS)
class WorkerTests(TransactionTestCase):
    def setUp(self):
        self.worker = Worker("test:1", FAST)

    def test_credit_applied_once(self):
        post(self.client, "msg_1", credit(amount=500))
        post(self.client, "msg_1", credit(amount=500))
        post(self.client, "msg_2", credit(amount=500))  # the same body, another event
        drain(self.worker)
        self.assertEqual(LedgerEntry.objects.filter(kind="credit").count(), 2)
        self.assertEqual(Wallet.objects.get(customer_id="cus_1").balance, 1000)
        self.assertEqual(set(InboxEvent.objects.values_list("status", "attempts")), {("succeeded", 1)})

    def test_event_before_its_invoice_retried_then_applied(self):
        post(self.client, "msg_paid", envelope("invoice.paid", {"id": "in_1", "amount_paid": 900}))
        task = self.worker.claim()
        self.worker.process(task)
        event = InboxEvent.objects.get(event_id="msg_paid")
        self.assertEqual((event.status, event.attempts), ("queued", 1))
        self.assertIn("not known yet", event.last_error)
        post(self.client, "msg_new", envelope("invoice.created", {"id": "in_1", "amount_due": 900, "currency": "usd"}))
        post(self.client, "msg_fin", envelope("invoice.finalized", {"id": "in_1"}))
        drain(self.worker)
        self.assertEqual(Invoice.objects.get(invoice_id="in_1").status, "paid")
        self.assertEqual(LedgerEntry.objects.filter(invoice_id="in_1").count(), 1)
        self.assertEqual(InboxEvent.objects.get(event_id="msg_paid").status, "succeeded")

    def test_stale_transition_ignored_and_one_payment_per_invoice(self):
        for msg, body in [("m1", envelope("invoice.created", {"id": "in_1", "amount_due": 10, "currency": "usd"})),
                          ("m2", envelope("invoice.finalized", {"id": "in_1"})),
                          ("m3", envelope("invoice.paid", {"id": "in_1", "amount_paid": 10})),
                          ("m4", envelope("invoice.paid", {"id": "in_1", "amount_paid": 10})),
                          ("m5", envelope("invoice.voided", {"id": "in_1"}))]:
            post(self.client, msg, body)
            drain(self.worker)
        self.assertEqual(Invoice.objects.get(invoice_id="in_1").status, "paid")
        self.assertEqual(LedgerEntry.objects.filter(invoice_id="in_1").count(), 1)

    def test_dead_lettered_after_max_attempts(self):
        post(self.client, "msg_1", envelope("invoice.voided", {"id": "in_never"}))
        drain(self.worker)
        event = InboxEvent.objects.get()
        self.assertEqual((event.status, event.attempts), ("dead_letter", FAST.max_attempts))
        self.assertIn("not known yet", event.last_error)
        self.assertIsNotNone(event.payload)

    def test_expired_lease_claimed_again(self):
        post(self.client, "msg_1", credit())
        self.worker.claim()  # a worker that died holding the claim
        InboxEvent.objects.update(locked_until=timezone.now() - timedelta(seconds=1))
        other = Worker("test:2", FAST)
        drain(other)
        event = InboxEvent.objects.get()
        self.assertEqual((event.status, event.attempts, LedgerEntry.objects.count()), ("succeeded", 2, 1))

    def test_lost_connection_is_a_retried_attempt(self):
        post(self.client, "msg_1", credit())
        task = self.worker.claim()
        # The session dies under the worker mid-task, as when the server
        # terminates it: the attempt fails and is recorded on a new session.
        with connection.cursor() as c:
            c.execute("SELECT pg_backend_pid()")
            pid = c.fetchone()[0]
        killer = connections.create_connection("default")
        with killer.cursor() as c:
            c.execute("SELECT pg_terminate_backend(%s)", [pid])
        killer.close()
        self.worker.process(task)
        drain(self.worker)
        event = InboxEvent.objects.get()
        self.assertEqual((event.status, event.attempts, LedgerEntry.objects.count()), ("succeeded", 2, 1))

    def test_customer_updates_ordered_by_event_time(self):
        def update(msg, ts, name):
            post(self.client, msg, envelope("customer.updated", {"id": "cus_9", "name": name}, timestamp=ts))
            drain(self.worker)
        update("u1", "2026-01-01T00:00:01Z", "one")
        update("u3", "2026-01-01T00:00:03Z", "three")
        update("u2", "2026-01-01T00:00:02Z", "two")
        self.assertEqual(Customer.objects.get().name, "three")
        post(self.client, "d4", envelope("customer.deleted", {"id": "cus_9"}, timestamp="2026-01-01T00:00:04Z"))
        drain(self.worker)
        update("u5-late", "2026-01-01T00:00:02.5Z", "late")
        customer = Customer.objects.get()
        self.assertEqual((customer.deleted, customer.name), (True, "three"))

    def test_purge_forgets_finished_work_only(self):
        post(self.client, "done", credit(grant_id="cg_done"))
        drain(self.worker)
        post(self.client, "waiting", credit(grant_id="cg_wait"))
        InboxEvent.objects.update(received_at=timezone.now() - timedelta(days=30))
        call_command("purge_webhook_events", "--as-of", (timezone.now() + timedelta(days=1)).isoformat())
        self.assertEqual(list(InboxEvent.objects.values_list("event_id", flat=True)), ["waiting"])
        # The provider resends the forgotten event: accepted again, and its
        # ledger entry keeps it from crediting twice.
        self.assertEqual(post(self.client, "done", credit(grant_id="cg_done")).status_code, 202)
        drain(self.worker)
        self.assertEqual(LedgerEntry.objects.filter(event_id="done").count(), 1)
        self.assertEqual(InboxEvent.objects.get(event_id="done").status, "succeeded")
