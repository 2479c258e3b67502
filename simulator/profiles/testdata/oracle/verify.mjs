// The oracle: verifies webhook requests rendered by hookcert's contract engine
// the way each provider's receivers do, with the provider's OWN library where
// one exists on npm, else with node:crypto following the provider's documented
// algorithm. It shares no code with hookcert.
//
// stdin: a JSON array of cases; stdout: a JSON array of results, in order.
//
//   {"op": "verify", "name", "profile", "method", "url", "headers": {name: value},
//    "body": base64, "secret" (HMAC, token), "public_key" (ed25519, ecdsa-p256)}
//     -> {"name", "ok": bool, "verifier", "error"}
//   {"op": "answer", "name", "profile", "method", "url", "headers", "body",
//    "secret", "verify_token"}
//     -> {"name", "ok", "verifier", "status", "content_type", "answer": base64 | null}
//        the handshake answer a correct receiver gives, derived from the request
//        as the provider documents it (null: the receiver must refuse it).
//
// Run by simulator/profiles/provider_oracle_test.go; install with `npm ci`.

import crypto from "node:crypto";
import { createRequire } from "node:module";
import { verify as octokitVerify } from "@octokit/webhooks-methods";

const require = createRequire(import.meta.url);
// The module twilio.validateRequest comes from; loading it alone skips the REST client.
const twilio = require("twilio/lib/webhooks/webhooks");
const { EventWebhook } = require("@sendgrid/eventwebhook");
const { verifyKey } = require("discord-interactions");
const { Webhook: StandardWebhook } = require("standardwebhooks");
const { Webhook: SvixWebhook } = require("svix");

// ---- helpers (node:crypto, each provider's documented algorithm) ----

const hmac = (alg, key, ...parts) => {
  const m = crypto.createHmac(alg, key);
  for (const p of parts) m.update(p);
  return m.digest();
};

// equal compares two strings in constant time (as the providers' docs ask).
const equal = (a, b) => {
  const x = Buffer.from(String(a));
  const y = Buffer.from(String(b));
  return x.length === y.length && crypto.timingSafeEqual(x, y);
};

const header = (c, name) => {
  const want = name.toLowerCase();
  for (const [k, v] of Object.entries(c.headers || {})) {
    if (k.toLowerCase() === want) return v;
  }
  return undefined;
};

const need = (c, name) => {
  const v = header(c, name);
  if (v === undefined || v === "") throw new Error(`header ${name} is missing`);
  return v;
};

const needSecret = (c) => {
  if (!c.secret) throw new Error("no secret given");
  return c.secret;
};

const check = (ok, what) => {
  if (!ok) throw new Error(`${what} does not match`);
  return true;
};

// bodyHMAC: a signature header holding prefix + encoded HMAC of the raw body.
const bodyHMAC = (alg, enc, name, prefix = "") => (c) =>
  check(equal(need(c, name), prefix + hmac(alg, needSecret(c), c.raw).toString(enc)), name);

// ---- verifiers, by profile ID ----

const verifiers = {
  // Stripe: t=<ts>,v1=<hex HMAC-SHA256 of "{t}.{body}">; the whole whsec_ string
  // is the key; any v1 may match (stripe-go parseSignatureHeader).
  stripe: {
    by: "node:crypto (Stripe docs: Stripe-Signature v1)",
    verify(c) {
      const parts = need(c, "Stripe-Signature").split(",").map((p) => p.split("="));
      const t = parts.find(([k]) => k === "t")?.[1];
      if (!t) throw new Error("Stripe-Signature has no t=");
      const want = hmac("sha256", needSecret(c), `${t}.`, c.raw).toString("hex");
      return check(parts.some(([k, v]) => k === "v1" && equal(v, want)), "Stripe-Signature v1");
    },
  },
  github: {
    by: "@octokit/webhooks-methods verify",
    async verify(c) {
      return check(await octokitVerify(needSecret(c), c.raw.toString("utf8"), need(c, "X-Hub-Signature-256")), "X-Hub-Signature-256");
    },
  },
  shopify: { by: "node:crypto (Shopify docs: base64 HMAC-SHA256 of the body)", verify: bodyHMAC("sha256", "base64", "X-Shopify-Hmac-Sha256") },
  "standard-webhooks": {
    by: "standardwebhooks Webhook.verify",
    verify(c) {
      new StandardWebhook(needSecret(c)).verify(c.raw.toString("utf8"), c.headers);
      return true;
    },
  },
  svix: {
    by: "svix Webhook.verify",
    verify(c) {
      new SvixWebhook(needSecret(c)).verify(c.raw.toString("utf8"), lower(c.headers));
      return true;
    },
  },
  // Slack: v0=<hex HMAC-SHA256 of "v0:{ts}:{body}">.
  slack: {
    by: "node:crypto (Slack docs: v0 signature)",
    verify(c) {
      const ts = need(c, "X-Slack-Request-Timestamp");
      return check(equal(need(c, "X-Slack-Signature"), "v0=" + hmac("sha256", needSecret(c), `v0:${ts}:`, c.raw).toString("hex")), "X-Slack-Signature");
    },
  },
  // Paddle: ts=<ts>;h1=<hex HMAC-SHA256 of "{ts}:{body}">; any h1 may match.
  paddle: {
    by: "node:crypto (Paddle docs: Paddle-Signature)",
    verify(c) {
      const parts = need(c, "Paddle-Signature").split(";").map((p) => p.split("="));
      const ts = parts.find(([k]) => k === "ts")?.[1];
      if (!ts) throw new Error("Paddle-Signature has no ts=");
      const want = hmac("sha256", needSecret(c), `${ts}:`, c.raw).toString("hex");
      return check(parts.some(([k, v]) => k === "h1" && equal(v, want)), "Paddle-Signature h1");
    },
  },
  // Twilio: its own validator, over the full URL and the POST parameters.
  twilio: {
    by: "twilio validateRequest",
    verify(c) {
      // A repeated name becomes an array, which validateRequest signs value by value.
      const params = {};
      for (const [k, v] of new URLSearchParams(c.raw.toString("utf8"))) {
        params[k] = k in params ? [].concat(params[k], v) : v;
      }
      return check(twilio.validateRequest(needSecret(c), need(c, "X-Twilio-Signature"), c.url, params), "X-Twilio-Signature");
    },
  },
  sendgrid: {
    by: "@sendgrid/eventwebhook EventWebhook.verifySignature",
    verify(c) {
      if (!c.public_key) throw new Error("no public key given");
      const ew = new EventWebhook();
      const key = ew.convertPublicKeyToECDSA(c.public_key);
      return check(
        ew.verifySignature(key, c.raw.toString("utf8"), need(c, "X-Twilio-Email-Event-Webhook-Signature"), need(c, "X-Twilio-Email-Event-Webhook-Timestamp")),
        "X-Twilio-Email-Event-Webhook-Signature",
      );
    },
  },
  // Mailgun: the body's signature object: hex HMAC-SHA256 of timestamp + token.
  mailgun: {
    by: "node:crypto (Mailgun docs: securing webhooks)",
    verify(c) {
      const sig = JSON.parse(c.raw.toString("utf8")).signature;
      if (!sig || typeof sig.timestamp !== "string" || typeof sig.token !== "string" || typeof sig.signature !== "string") {
        throw new Error("body has no signature object with string timestamp, token and signature");
      }
      return check(equal(sig.signature, hmac("sha256", needSecret(c), sig.timestamp, sig.token).toString("hex")), "signature.signature");
    },
  },
  // Square: base64 HMAC-SHA256 of the notification URL + body. (The square SDK's
  // WebhooksHelper does the same, but the package is tens of MB.)
  square: {
    by: "node:crypto (Square docs: validate notifications)",
    verify(c) {
      return check(equal(need(c, "x-square-hmacsha256-signature"), hmac("sha256", needSecret(c), c.url, c.raw).toString("base64")), "x-square-hmacsha256-signature");
    },
  },
  // Zoom: v0=<hex HMAC-SHA256 of "v0:{ts}:{body}">.
  zoom: {
    by: "node:crypto (Zoom docs: x-zm-signature)",
    verify(c) {
      const ts = need(c, "x-zm-request-timestamp");
      return check(equal(need(c, "x-zm-signature"), "v0=" + hmac("sha256", needSecret(c), `v0:${ts}:`, c.raw).toString("hex")), "x-zm-signature");
    },
    // endpoint.url_validation: {plainToken, encryptedToken = hex HMAC-SHA256(secret, plainToken)}.
    answer(c) {
      const b = JSON.parse(c.raw.toString("utf8"));
      if (b.event !== "endpoint.url_validation") throw new Error("not an endpoint.url_validation");
      const plainToken = b.payload.plainToken;
      const encryptedToken = hmac("sha256", needSecret(c), plainToken).toString("hex");
      return { status: 200, content_type: "application/json", answer: JSON.stringify({ plainToken, encryptedToken }) };
    },
  },
  // Twitch: sha256=<hex HMAC-SHA256 of message id + timestamp + body>.
  "twitch-eventsub": {
    by: "node:crypto (Twitch docs: verifying the event message)",
    verify(c) {
      const id = need(c, "Twitch-Eventsub-Message-Id");
      const ts = need(c, "Twitch-Eventsub-Message-Timestamp");
      return check(equal(need(c, "Twitch-Eventsub-Message-Signature"), "sha256=" + hmac("sha256", needSecret(c), id, ts, c.raw).toString("hex")), "Twitch-Eventsub-Message-Signature");
    },
    // webhook_callback_verification: the challenge, as the raw body.
    answer(c) {
      if (need(c, "Twitch-Eventsub-Message-Type") !== "webhook_callback_verification") throw new Error("not a webhook_callback_verification");
      return { status: 200, content_type: "text/plain", answer: JSON.parse(c.raw.toString("utf8")).challenge };
    },
  },
  intercom: { by: "node:crypto (Intercom: X-Hub-Signature sha1)", verify: bodyHMAC("sha1", "hex", "X-Hub-Signature", "sha1=") },
  // HubSpot v3: base64 HMAC-SHA256 of method + URI + body + timestamp.
  hubspot: {
    by: "node:crypto (HubSpot docs: X-HubSpot-Signature-v3)",
    verify(c) {
      const ts = need(c, "X-HubSpot-Request-Timestamp");
      return check(equal(need(c, "X-HubSpot-Signature-v3"), hmac("sha256", needSecret(c), c.method, c.url, c.raw, ts).toString("base64")), "X-HubSpot-Signature-v3");
    },
  },
  // GitLab: the configured token itself.
  gitlab: {
    by: "node:crypto timingSafeEqual (GitLab docs: X-Gitlab-Token)",
    verify(c) {
      return check(equal(need(c, "X-Gitlab-Token"), needSecret(c)), "X-Gitlab-Token");
    },
  },
  linear: { by: "node:crypto (Linear: Linear-Signature)", verify: bodyHMAC("sha256", "hex", "Linear-Signature") },
  discord: {
    by: "discord-interactions verifyKey",
    async verify(c) {
      if (!c.public_key) throw new Error("no public key given");
      return check(await verifyKey(c.raw, need(c, "X-Signature-Ed25519"), need(c, "X-Signature-Timestamp"), c.public_key), "X-Signature-Ed25519");
    },
    // A PING (type 1) is answered with a PONG (type 1).
    answer(c) {
      if (JSON.parse(c.raw.toString("utf8")).type !== 1) throw new Error("not a PING");
      return { status: 200, content_type: "application/json", answer: JSON.stringify({ type: 1 }) };
    },
  },
  vercel: { by: "node:crypto (Vercel: x-vercel-signature)", verify: bodyHMAC("sha1", "hex", "x-vercel-signature") },
  "checkout-com": { by: "node:crypto (Checkout.com: Cko-Signature)", verify: bodyHMAC("sha256", "hex", "Cko-Signature") },
  "meta-whatsapp": {
    by: "node:crypto (Meta Graph webhooks: X-Hub-Signature-256)",
    verify: bodyHMAC("sha256", "hex", "X-Hub-Signature-256", "sha256="),
    // GET hub.mode=subscribe&hub.verify_token&hub.challenge: the challenge when
    // the token is the configured one; a refusal otherwise.
    answer(c) {
      const q = new URL(c.url).searchParams;
      if (q.get("hub.mode") !== "subscribe" || !c.verify_token || !equal(q.get("hub.verify_token") ?? "", c.verify_token)) {
        return { status: 403, answer: null };
      }
      return { status: 200, content_type: "text/plain", answer: q.get("hub.challenge") };
    },
  },
};

// Clerk and Resend deliver through Svix, OpenAI follows Standard Webhooks.
verifiers.clerk = verifiers.svix;
verifiers.resend = verifiers.svix;
verifiers.openai = verifiers["standard-webhooks"];
// Slack's url_verification: the challenge.
verifiers.slack.answer = (c) => {
  const b = JSON.parse(c.raw.toString("utf8"));
  if (b.type !== "url_verification") throw new Error("not a url_verification");
  return { status: 200, content_type: "text/plain", answer: b.challenge };
};

function lower(h) {
  const out = {};
  for (const [k, v] of Object.entries(h || {})) out[k.toLowerCase()] = v;
  return out;
}

async function run(c) {
  const v = verifiers[c.profile];
  const res = { name: c.name, ok: false, verifier: v ? v.by : "" };
  if (!v) {
    res.error = `no verifier for profile ${c.profile}`;
    return res;
  }
  c.raw = Buffer.from(c.body || "", "base64");
  c.method = c.method || "POST";
  try {
    if ((c.op || "verify") === "verify") {
      res.ok = (await v.verify(c)) === true;
    } else if (c.op === "answer") {
      if (!v.answer) throw new Error(`no handshake for profile ${c.profile}`);
      const a = v.answer(c);
      res.ok = true;
      res.status = a.status;
      res.content_type = a.content_type || "";
      res.answer = a.answer === null ? null : Buffer.from(a.answer).toString("base64");
    } else {
      throw new Error(`unknown op ${c.op}`);
    }
  } catch (e) {
    res.ok = false;
    // Library errors name what failed; none of them quotes the secret.
    res.error = String(e && e.message ? e.message : e);
  }
  return res;
}

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const cases = JSON.parse(Buffer.concat(chunks).toString("utf8"));
const out = [];
for (const c of cases) out.push(await run(c));
process.stdout.write(JSON.stringify(out));
