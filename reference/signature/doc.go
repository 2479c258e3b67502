// Package signature verifies the signature of one webhook delivery on its raw body,
// the way each provider documents it.
//
// It is part of the hookcert reference receiver and deliberately stands alone: it
// imports nothing from the simulator, so it shows the algorithm a receiver must
// implement rather than re-using the code that produced the signature.
//
// Profiles and their contracts (facts and sources: hookcert's providers.yaml):
//
//   - stripe: Stripe-Signature "t=<unix>,v1=<hex>[,v1=...]", HMAC-SHA256 over
//     "{t}.{raw_body}" keyed with the whole whsec_ string; any v1 may match;
//     timestamps older than 300 s are rejected (https://docs.stripe.com/webhooks).
//   - standard-webhooks: webhook-id, webhook-timestamp, webhook-signature
//     ("v1,<base64>" entries, space separated), HMAC-SHA256 over
//     "{id}.{timestamp}.{raw_body}" keyed with base64-decode(secret without
//     whsec_); 300 s tolerance in both directions
//     (https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md).
//   - svix: the same scheme with svix-id, svix-timestamp, svix-signature
//     (https://docs.svix.com/receiving/verifying-payloads/how-manual).
//   - github: X-Hub-Signature-256 "sha256=<hex>", HMAC-SHA256 over the raw body,
//     no timestamp (https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries).
//   - shopify: X-Shopify-Hmac-Sha256 "<base64>", HMAC-SHA256 over the raw body, no
//     timestamp (https://shopify.dev/docs/apps/build/webhooks/verify-deliveries).
//
// Verify checks the signature before the timestamp, so a stale_timestamp error
// means "authentic but too old" (a replay), and a delivery whose signed timestamp
// was altered fails as bad_signature. All comparisons are constant-time
// (hmac.Equal). Error texts never contain the secret, the expected signature or
// any header value the sender supplied.
package signature
