#!/usr/bin/env python3
"""Derive the test vectors of the contracts under ../../contracts/ a second way.

Every `vectors:` entry that is not published by the provider was computed by
this script, following the provider's documented algorithm
(/work/shared/providers.yaml), with Python's standard library (hmac, hashlib,
base64) and, for the asymmetric schemes, the `cryptography` package: never
with hookcert's own engine. Published vectors are recomputed here too, as a
check of the copy. Run: python3 derive_vectors.py (prints one line per vector;
a mismatch with a pinned value exits 1).
"""
import base64
import hashlib
import hmac
import sys

P = '{"id":"evt_test_webhook","object":"event"}'  # providers.yaml's derived-vector payload

fail = False


def pin(name, got, want=None):
    global fail
    mark = ""
    if want is not None and got != want:
        mark, fail = "  MISMATCH, want " + want, True
    print(f"{name}: {got}{mark}")


def mac(alg, key, msg):
    return hmac.new(key.encode() if isinstance(key, str) else key, msg.encode() if isinstance(msg, str) else msg, alg).digest()


def hexmac(alg, key, msg):
    return mac(alg, key, msg).hex()


def b64mac(alg, key, msg):
    return base64.b64encode(mac(alg, key, msg)).decode()


# Twilio: full URL + params sorted by name (repeated names: values sorted), base64 HMAC-SHA1.
def twilio(token, url, params):
    return b64mac(hashlib.sha1, token, url + "".join(k + v for k, v in sorted(params)))


tp = [("CallSid", "CA1234567890ABCDE"), ("Caller", "+14158675309"), ("Digits", "1234"), ("From", "+14158675309"), ("To", "+18005551212")]
u = "https://mycompany.com/myapp.php?foo=1&bar=2"
pin("twilio published", twilio("12345", u, tp), "RSOYDt4T1cUTdK1PDd93/VVr8B8=")
pin("twilio published duplicate params", twilio("12345", u, [("Sid", "CA123"), ("SidAccount", "AC123"), ("Digits", "5678"), ("Digits", "1234")]), "IK+Dwps556ElfBT0I3Rgjkr1wJU=")
pin("twilio published http :1234", twilio("12345", "http://mycompany.com:1234/myapp.php?foo=1&bar=2", tp), "Zmvh+3yNM1Phv2jhDCwEM3q5ebU=")
pin("twilio published https :443", twilio("12345", "https://mycompany.com:443/myapp.php?foo=1&bar=2", tp), "kvajT1Ptam85bY51eRf/AJRuM3w=")
pin("twilio published http :80", twilio("12345", "http://mycompany.com:80/myapp.php?foo=1&bar=2", tp), "0ZXoZLH/DfblKGATFgpif+LLRf4=")

# Mailgun: hex HMAC-SHA256 of timestamp + token (providers.yaml derived vector).
pin("mailgun derived", hexmac(hashlib.sha256, "key-test-signing-key", "1700000000" + "e0b5477167110d68991efc6b9f89f0a11066af27834600e123"),
    "400f4f663d6d6b9d58740e59d77fd9365b6fcaeb86f52c9a6e2e68c3018266d9")

# Square: base64 HMAC-SHA256 of notification URL + body.
pin("square derived", b64mac(hashlib.sha256, "test_signature_key", "https://example.com/webhooks/square" + P), "jx4R9OEZI2w/jTRGbeQ5bbjuHh3SKWCBEhcDsU/40gA=")

# Zoom: v0=hex HMAC-SHA256 of "v0:{ts}:{body}"; the url_validation answer's encryptedToken.
pin("zoom derived", "v0=" + hexmac(hashlib.sha256, "zoom_secret_token", "v0:1700000000:" + P), "v0=aef3b4e8257e374e4f5895139019798c3495ed5569e4dd38b921af630f5c9b01")
pin("zoom url_validation encryptedToken (plainToken qgg8vlvZRS6UYooatFL8Aw)", hexmac(hashlib.sha256, "zoom_secret_token", "qgg8vlvZRS6UYooatFL8Aw"))

# Twitch EventSub: sha256=hex HMAC-SHA256 of message id + timestamp + body (published by twitch_api).
tb = '{"subscription":{"id":"ae2ff348-e102-16be-a3eb-6830c1bf38d2","status":"enabled","type":"channel.follow","version":"1","condition":{"broadcaster_user_id":"44429626"},"transport":{"method":"webhook","callback":"null"},"created_at":"2021-02-19T23:47:00.7621315Z"},"event":{"user_id":"28408015","user_login":"testFromUser","user_name":"testFromUser","broadcaster_user_id":"44429626","broadcaster_user_login":"44429626","broadcaster_user_name":"testBroadcaster"}}'
assert len(tb) == 458
pin("twitch published", "sha256=" + hexmac(hashlib.sha256, "secretabcd", "ae2ff348-e102-16be-a3eb-6830c1bf38d2" + "2021-02-19T23:47:00.8091512Z" + tb),
    "sha256=d10f5bd9474b7ac7bd7105eb79c2d52768b4d0cd2a135982c3bf5a1d59a78823")

# Intercom: sha1=hex HMAC-SHA1 of the body.
pin("intercom derived", "sha1=" + hexmac(hashlib.sha1, "intercom_client_secret", P), "sha1=07fef8ac27e29d3cc2ac1b1b38a6377842c7e674")

# HubSpot v3: base64 HMAC-SHA256 of method + URI + body + timestamp (ms).
pin("hubspot derived", b64mac(hashlib.sha256, "hubspot_client_secret", "POST" + "https://example.com/webhooks/hubspot" + P + "1700000000000"), "138Rp99mHoYT/5E5ZQaEQCqiLW7x50KSFZVz6Roa8qQ=")

# Linear: hex HMAC-SHA256 of the body.
pin("linear derived", hexmac(hashlib.sha256, "linear_test_secret", P))
# Vercel: hex HMAC-SHA1 of the body.
pin("vercel derived", hexmac(hashlib.sha1, "vercel_test_secret", P))
# Checkout.com: hex HMAC-SHA256 of the body.
pin("checkout-com derived", hexmac(hashlib.sha256, "cko_test_secret", P))
# Meta: sha256=hex HMAC-SHA256 of the body with the app secret.
pin("meta-whatsapp derived", "sha256=" + hexmac(hashlib.sha256, "meta_app_secret", P))

# Standard Webhooks (openai) and Svix (clerk, resend): published library vector.
sw_key = base64.b64decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
pin("standard webhooks published", "v1," + base64.b64encode(mac(hashlib.sha256, sw_key, 'msg_p5jXN8AQM9LWM0D4loKWxJek.1614265330.{"test": 2432232314}')).decode(),
    "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")

try:
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519
except ImportError:
    print("asymmetric vectors: the cryptography package is missing (pip install cryptography)")
    sys.exit(1 if fail else 0)

# Discord: hex Ed25519 of X-Signature-Timestamp + body; the seed is RFC 8032's
# TEST 1 secret key, whose public key RFC 8032 publishes.
seed = bytes.fromhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
sk = ed25519.Ed25519PrivateKey.from_private_bytes(seed)
pub = sk.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw).hex()
pin("discord public key (RFC 8032 TEST 1)", pub, "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
pin("discord derived", sk.sign(("1700000000" + P).encode()).hex())
pin("discord PING derived", sk.sign(b'1700000000{"type":1}').hex())

# SendGrid: base64 ECDSA P-256 / SHA-256 (ASN.1 DER) of timestamp + body; the
# key is a fixed scalar so the script gives the same key every run, and the
# signature is RFC 6979's deterministic one, so it can be pinned byte for byte
# (any other ECDSA signature over the same content verifies as well).
d = int.from_bytes(hashlib.sha256(b"hookcert sendgrid test key").digest(), "big")
ek = ec.derive_private_key(d, ec.SECP256R1())
pkcs8 = base64.b64encode(ek.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())).decode()
spki = base64.b64encode(ek.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)).decode()
print("sendgrid secret (PKCS#8 DER, base64):", pkcs8)
print("sendgrid public key (SPKI DER, base64):", spki)
sb = "[" + P + "]"
sig = base64.b64encode(ek.sign(("1700000000" + sb).encode(), ec.ECDSA(hashes.SHA256(), deterministic_signing=True))).decode()
ek.public_key().verify(base64.b64decode(sig), ("1700000000" + sb).encode(), ec.ECDSA(hashes.SHA256()))
pin("sendgrid derived (RFC 6979)", sig)
sys.exit(1 if fail else 0)
