from django.test import SimpleTestCase

from webhooks.signatures import SignatureError, sign, verify

# The Standard Webhooks libraries' published test vector (Go and JavaScript
# libraries, webhook_test.go / webhook.test.ts).
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
MSG_ID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
TIMESTAMP = "1614265330"
PAYLOAD = b'{"test": 2432232314}'
EXPECTED = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="


def headers(signature, msg_id=MSG_ID, timestamp=TIMESTAMP):
    return {"webhook-id": msg_id, "webhook-timestamp": timestamp, "webhook-signature": signature}


class SignatureTests(SimpleTestCase):
    def test_published_vector(self):
        self.assertEqual(sign(SECRET, MSG_ID, TIMESTAMP, PAYLOAD), EXPECTED)
        verify(SECRET, headers(EXPECTED), PAYLOAD, 300, now=int(TIMESTAMP))

    def test_secret_without_prefix(self):
        verify(SECRET[len("whsec_"):], headers(EXPECTED), PAYLOAD, 300, now=int(TIMESTAMP))

    def test_published_invalid_signature(self):
        with self.assertRaises(SignatureError):
            verify(SECRET, headers("v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc="), PAYLOAD, 300, now=int(TIMESTAMP))

    def test_any_v1_of_several_matches(self):
        # During a secret rotation the header lists one signature per secret;
        # other versions are skipped.
        listed = "v1a,bm90IGFuIGVkMjU1MTkgc2lnbmF0dXJl v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc= " + EXPECTED
        verify(SECRET, headers(listed), PAYLOAD, 300, now=int(TIMESTAMP))

    def test_tampered_body(self):
        with self.assertRaises(SignatureError):
            verify(SECRET, headers(EXPECTED), PAYLOAD + b" ", 300, now=int(TIMESTAMP))

    def test_timestamp_outside_the_tolerance_either_way(self):
        for now in (int(TIMESTAMP) + 301, int(TIMESTAMP) - 301):
            with self.assertRaises(SignatureError):
                verify(SECRET, headers(EXPECTED), PAYLOAD, 300, now=now)
        verify(SECRET, headers(EXPECTED), PAYLOAD, 300, now=int(TIMESTAMP) + 299)

    def test_missing_or_malformed_headers(self):
        for h in (headers(EXPECTED, msg_id=""), headers(EXPECTED, timestamp="soon"), headers("")):
            with self.assertRaises(SignatureError):
                verify(SECRET, h, PAYLOAD, 300, now=int(TIMESTAMP))
