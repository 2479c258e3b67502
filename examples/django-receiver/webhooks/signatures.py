"""Standard Webhooks v1 signature verification (standardwebhooks.com, spec v1.0.0).

The sender signs "{webhook-id}.{webhook-timestamp}.{raw body}" with HMAC-SHA256;
the key is the endpoint secret without its "whsec_" prefix, base64-decoded. The
webhook-signature header is a space-delimited list of "v1,<base64>" entries (one
per active secret while a secret is rotated): any v1 match is enough, other
versions are skipped. Timestamps more than the tolerance away, in the past or
the future, are refused so that a captured delivery cannot be replayed later.
"""

import base64
import binascii
import hashlib
import hmac
import time


class SignatureError(Exception):
    """The delivery is not signed by the endpoint's secret, or not recently."""


def signing_key(secret):
    raw = secret[len("whsec_"):] if secret.startswith("whsec_") else secret
    try:
        return base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError) as exc:
        # Never quote the secret itself.
        raise SignatureError("the endpoint secret is not base64") from exc


def sign(secret, msg_id, timestamp, body):
    """The v1 signature of body, as the sender computes it."""
    signed = f"{msg_id}.{timestamp}.".encode() + body
    digest = hmac.new(signing_key(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def verify(secret, headers, body, tolerance, now=None):
    """Raise SignatureError unless headers carry a valid, recent v1 signature of body.

    headers maps the lower-case header names webhook-id, webhook-timestamp and
    webhook-signature to their values.
    """
    msg_id = headers.get("webhook-id", "")
    timestamp = headers.get("webhook-timestamp", "")
    signatures = headers.get("webhook-signature", "")
    if not msg_id or not timestamp or not signatures:
        raise SignatureError("missing webhook-id, webhook-timestamp or webhook-signature")
    try:
        sent_at = int(timestamp)
    except ValueError:
        raise SignatureError("webhook-timestamp is not an integer") from None
    now = time.time() if now is None else now
    if sent_at < now - tolerance:
        raise SignatureError("webhook-timestamp is too old")
    if sent_at > now + tolerance:
        raise SignatureError("webhook-timestamp is too new")
    expected = sign(secret, msg_id, timestamp, body).encode()
    for entry in signatures.split(" "):
        version, _, _ = entry.partition(",")
        if version == "v1" and hmac.compare_digest(entry.encode(), expected):
            return
    raise SignatureError("no valid v1 signature")
