import json
import time


from webhooks.signatures import sign

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
PATH = "/webhooks/payments/acct_test/"
ENDPOINTS = {("payments", "acct_test"): SECRET}


def envelope(event_type, data, timestamp="2026-01-02T03:04:05.123456789Z"):
    return json.dumps({"type": event_type, "timestamp": timestamp, "data": data}).encode()


def post(client, msg_id, body, secret=SECRET, path=PATH, sent_at=None):
    """POST body signed the Standard Webhooks way."""
    ts = str(int(time.time()) if sent_at is None else sent_at)
    return client.generic(
        "POST", path, body, content_type="application/json",
        HTTP_WEBHOOK_ID=msg_id, HTTP_WEBHOOK_TIMESTAMP=ts, HTTP_WEBHOOK_SIGNATURE=sign(secret, msg_id, ts, body),
    )


def credit(grant_id="cg_1", customer="cus_1", amount=500):
    return envelope("credit_grant.created", {"id": grant_id, "customer": customer, "amount": amount, "currency": "usd"})


