from django.test import TestCase, override_settings

from webhooks.models import InboxEvent

from .helpers import ENDPOINTS, PATH, credit, envelope, post


@override_settings(WEBHOOK_ENDPOINTS=ENDPOINTS, WEBHOOK_MAX_BODY_BYTES=4096)
class ReceiveTests(TestCase):
    def test_accepted_then_duplicate(self):
        first = post(self.client, "msg_1", credit())
        self.assertEqual(first.status_code, 202)
        again = post(self.client, "msg_1", credit())
        self.assertEqual(again.status_code, 200)
        self.assertEqual(again.json()["status"], "duplicate")
        event = InboxEvent.objects.get()
        self.assertEqual((event.source, event.account, event.event_id, event.status), ("payments", "acct_test", "msg_1", "queued"))

    def test_same_body_other_id_is_another_event(self):
        self.assertEqual(post(self.client, "msg_1", credit()).status_code, 202)
        self.assertEqual(post(self.client, "msg_2", credit()).status_code, 202)
        self.assertEqual(InboxEvent.objects.count(), 2)

    def test_refused_deliveries_store_nothing(self):
        cases = [
            (post(self.client, "msg_1", credit(), secret="whsec_" + "QUJD" * 8), 401),
            (post(self.client, "msg_2", credit(), sent_at=1000), 401),
            (post(self.client, "msg_3", b"{not json"), 400),
            (post(self.client, "msg_4", envelope("credit_grant.created", {"id": "cg_1"})), 400),
            (post(self.client, "msg_5", envelope("credit_grant.created", [])), 400),
            (post(self.client, "msg_6", credit(), path="/webhooks/payments/acct_other/"), 404),
            (post(self.client, "msg_7", credit() + b" " * 5000), 413),
        ]
        for response, status in cases:
            self.assertEqual(response.status_code, status, response.content)
        self.assertEqual(InboxEvent.objects.count(), 0)

    def test_unhandled_type_acknowledged_not_kept(self):
        response = post(self.client, "msg_1", envelope("invoice.upcoming", {"id": "in_1"}))
        self.assertEqual(response.status_code, 200)
        self.assertEqual(InboxEvent.objects.count(), 0)

    def test_only_post(self):
        self.assertEqual(self.client.get(PATH).status_code, 405)
