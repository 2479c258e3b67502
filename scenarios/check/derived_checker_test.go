package check_test

import (
	"testing"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// The derived checks: ACK-8 (the provider's handshake), ACK-9 (every signed
// input changed after signing) and DEDUP-8 (event IDs one byte apart).

// wrongAnswer is a handshake answered, but not as the provider expects.
func wrongAnswer(why string) attemptOpt {
	return func(a *history.Attempt) {
		a.Outcome, a.Status, a.ErrorClass, a.Error = history.OutcomeFailed, 200, "handshake_answer", why
	}
}

// nothing records the reads of keys that must have left nothing.
func (r *rec) nothing(phase string, keys ...profiles.Key) *rec {
	for _, k := range keys {
		r.rows(phase, k, 0)
		r.effects(phase, k, 0)
	}
	return r
}

// zoomKey is a key on the handshaking endpoint of ACK-8's histories.
func zoomKey(id string) profiles.Key {
	return profiles.Key{Source: "zoom", Account: account, EventID: id}
}

// ACK-8 on one endpoint whose provider re-validates every 72 h with a 3 s
// deadline: the handshake, a badly signed one refused, the control, and the
// re-validation; each handshake read to have left nothing under the
// endpoint with no event ID and with its challenge as one.
var ack8 = register(&table{
	id: "ACK-8",
	clean: func() *history.History {
		ep, ctl := zoomKey(""), zoomKey("evt_1")
		return scenario("ACK-8").
			fact("deadline:zoom/acct_A", "3s").fact("revalidate:zoom/acct_A", "72h0m0s").
			nothing("handshake-before", ep).
			send("handshake", ep, "", faults("handshake"), took(40*time.Millisecond)).
			nothing("handshake", ep, zoomKey("chal_1")).
			send("handshake-bad:bad-signature", ep, "", faults("handshake:bad-signature"), refused(401)).
			nothing("handshake-bad", ep, zoomKey("chal_2")).
			send("control", ctl, typeCredit).
			state("control", 1, ctl).
			send("handshake-revalidation", ep, "", faults("handshake"), took(30*time.Millisecond)).
			nothing("handshake-revalidation", ep, zoomKey("chal_3")).
			reconciled(ctl).done()
	},
	cases: []tcase{
		{name: "a provider that does not re-validate, no deadline documented: a slow answer passes", build: func() *history.History {
			ep, ctl := profiles.Key{Source: "slack", Account: account}, profiles.Key{Source: "slack", Account: account, EventID: "evt_1"}
			return scenario("ACK-8").
				send("handshake", ep, "", faults("handshake"), took(20*time.Second)).
				nothing("handshake", ep, profiles.Key{Source: "slack", Account: account, EventID: "chal_1"}).
				send("control", ctl, typeCredit).
				state("control", 1, ctl).
				reconciled(ctl).done()
		}},
		{name: "a documented refusal status given", edits: do(setFact("refuse_status:zoom/acct_A", "401"))},
		{name: "the challenge answered wrongly", codes: is("ack.handshake-wrong"),
			edits: do(attempts("handshake", "", wrongAnswer("the body is not the challenge")))},
		{name: "the handshake refused", codes: is("ack.handshake-wrong"),
			edits: do(attempts("handshake", "", refused(401)))},
		{name: "the connection reset", codes: is("ack.handshake-wrong"),
			edits: do(attempts("handshake", "", noAnswer("reset")))},
		{name: "never answered", codes: is("ack.handshake-late"),
			edits: do(attempts("handshake", "", noAnswer("timeout"), took(18*time.Second)))},
		{name: "answered after the deadline", codes: is("ack.handshake-late"),
			edits: do(attempts("handshake", "", took(3100*time.Millisecond)))},
		{name: "a badly signed handshake answered", codes: is("ack.handshake-bad-accepted"),
			edits: do(attempts("handshake-bad:bad-signature", "", acked))},
		{name: "a bad handshake refused with another status than documented", codes: is("ack.handshake-bad-accepted"),
			edits: do(setFact("refuse_status:zoom/acct_A", "403"))},
		{name: "the handshake stored as an event", codes: is("ack.handshake-stored"),
			edits: do(count("event_rows", "handshake", "", 1))},
		// Another scenario's event without an ID, stored before: no finding,
		// unless a handshake adds to it.
		{name: "an event without an ID there before the handshakes", edits: do(count("event_rows", "handshake-before", "", 1),
			keyCount("event_rows", "handshake", zoomKey(""), 1), keyCount("event_rows", "handshake-bad", zoomKey(""), 1), keyCount("event_rows", "handshake-revalidation", zoomKey(""), 1))},
		{name: "the handshake stored under no event ID beside an earlier one", codes: is("ack.handshake-stored"),
			edits: do(count("event_rows", "handshake-before", "", 1),
				keyCount("event_rows", "handshake", zoomKey(""), 2), keyCount("event_rows", "handshake-bad", zoomKey(""), 2), keyCount("event_rows", "handshake-revalidation", zoomKey(""), 2))},
		{name: "a bad handshake applied", codes: is("ack.handshake-stored"),
			edits: do(count("effects", "handshake-bad", "chal_2", 1))},
		{name: "the re-validation stored", codes: is("ack.handshake-stored"),
			edits: do(count("event_rows", "handshake-revalidation", "chal_3", 1))},
		{name: "the re-validation refused", codes: is("ack.handshake-revalidation"),
			edits: do(attempts("handshake-revalidation", "", refused(409)))},
		{name: "the re-validation answered wrongly", codes: is("ack.handshake-revalidation"),
			edits: do(attempts("handshake-revalidation", "", wrongAnswer("encryptedToken is not the HMAC of the plainToken")))},
		{name: "the re-validation late", codes: is("ack.handshake-revalidation"),
			edits: do(attempts("handshake-revalidation", "", took(5*time.Second)))},
		{name: "the control refused", codes: is("ack.control-rejected"),
			edits: do(attempts("control", "", refused(401)))},
		{name: "the control's row gone by the reconciliation", codes: is("reconcile.lost"),
			edits: do(count("event_rows", "reconcile", "evt_1", 0))},
		{name: "no handshake", reason: "sent no handshake",
			edits: do(dropRole("handshake"))},
		{name: "no read after the handshake", reason: `has no event_rows read in phase "handshake"`,
			edits: do(drop("event_rows", "handshake", ""))},
		{name: "no control", reason: "sent no valid delivery to hold its expectations against",
			edits: do(dropRole("control"), dropReads("evt_1"))},
	},
})

func TestACK8(t *testing.T) { ack8.run(t) }

// Roles of ACK-9's history on a Stripe-like endpoint (the body, the event ID
// in it, the timestamp and the key signed; several signatures; future
// timestamps refused) and a Twilio-like one (the URL, a form field and a
// header signed).
const (
	roleBody      = "derived:ack.unsigned-body stripe/acct_A body (the body) changed after signing"
	roleID        = "derived:ack.unsigned-id stripe/acct_A id (body $.id) changed after signing"
	roleTimestamp = "derived:ack.unsigned-timestamp stripe/acct_A timestamp (header Stripe-Signature) changed after signing"
	roleKey       = "derived:ack.wrong-key-accepted stripe/acct_A key (the signing key) changed after signing"
	rolePrefix    = "derived:ack.signature-format-accepted stripe/acct_A Stripe-Signature with its format prefix changed"
	roleTruncated = "derived:ack.signature-truncated-accepted stripe/acct_A Stripe-Signature cut to half its length"
	roleAllBad    = "derived:ack.wrong-key-accepted stripe/acct_A two signatures, neither with the endpoint's key"
	roleFuture    = "derived:ack.future-accepted stripe/acct_A signed 11m0s ahead (tolerance 5m0s)"
	roleRoll      = "boundary:stripe/acct_A a valid signature after an invalid one (a secret roll)"
	roleURL       = "derived:ack.unsigned-url twilio/acct_A url (the URL's query) changed after signing"
	roleForm      = "derived:ack.unsigned-form twilio/acct_A form:Amount (form field Amount) changed after signing"
	roleHeader    = "derived:ack.unsigned-header twilio/acct_A header:I-Twilio-Idempotency-Token (header I-Twilio-Idempotency-Token) changed after signing"
)

func twilioKey(id string) profiles.Key {
	return profiles.Key{Source: "twilio", Account: account, EventID: id}
}

var ack9 = register(&table{
	id: "ACK-9",
	clean: func() *history.History {
		body, id, idTo, ts, k, prefix, cut, allBad, future, roll, ctl :=
			key("evt_body"), key("evt_idx"), key("evt_idw"), key("evt_ts"), key("evt_key"), key("evt_prefix"),
			key("evt_cut"), key("evt_allbad"), key("evt_future"), key("evt_roll"), key("evt_ctl")
		u, form, hdr, tctl := twilioKey("evt_url"), twilioKey("evt_form"), twilioKey("evt_hdr"), twilioKey("evt_tctl")
		return scenario("ACK-9").
			send(roleBody, body, typeCredit, faults("alter:body"), refused(400)).
			send(roleID, id, typeCredit, faults("alter:id"), refused(401)).
			send(roleTimestamp, ts, typeCredit, faults("alter:timestamp"), refused(401)).
			send(roleKey, k, typeCredit, faults("alter:key"), refused(401)).
			send(rolePrefix, prefix, typeCredit, faults("signature:prefix"), refused(401)).
			send(roleTruncated, cut, typeCredit, faults("signature:truncate"), refused(401)).
			send(roleAllBad, allBad, typeCredit, faults("signature:all-invalid"), refused(401)).
			send(roleFuture, future, typeCredit, faults("ahead_by:11m0s"), refused(401)).
			send(roleRoll, roll, typeCredit, faults("signature:valid-among-invalid")).
			send("control", ctl, typeCredit).
			send(roleURL, u, typeCredit, faults("alter:url"), refused(403)).
			send(roleForm, form, typeCredit, faults("alter:form:Amount"), refused(403)).
			send(roleHeader, hdr, typeCredit, faults("alter:header:I-Twilio-Idempotency-Token"), refused(403)).
			send("control", tctl, typeCredit).
			nothing("bad", body, id, idTo, ts, k, prefix, cut, allBad, future, u, form, hdr).
			state("boundary", 1, roll).
			state("control", 1, ctl, tctl).
			reconciled(roll, ctl, tctl).done()
	},
	cases: []tcase{
		{name: "the body changed, accepted", codes: is("ack.unsigned-body"),
			edits: do(attempts(roleBody, "", acked))},
		{name: "the body changed, stored", codes: is("ack.unsigned-body"),
			edits: do(count("event_rows", "bad", "evt_body", 1))},
		{name: "the event ID changed, accepted", codes: is("ack.unsigned-id"),
			edits: do(attempts(roleID, "", acked))},
		// Stored under the ID it was changed to: read there too.
		{name: "the event ID changed, stored under the changed ID", codes: is("ack.unsigned-id"),
			edits: do(count("event_rows", "bad", "evt_idw", 1), count("effects", "bad", "evt_idw", 1))},
		{name: "the timestamp changed, accepted with a 200", codes: is("ack.unsigned-timestamp"),
			edits: do(attempts(roleTimestamp, "", acked))},
		{name: "the timestamp changed, answered 500", codes: is("ack.unsigned-timestamp"),
			edits: do(attempts(roleTimestamp, "", refused(500)))},
		{name: "another key accepted", codes: is("ack.wrong-key-accepted"),
			edits: do(attempts(roleKey, "", acked))},
		{name: "two invalid signatures accepted", codes: is("ack.wrong-key-accepted"),
			edits: do(attempts(roleAllBad, "", acked))},
		{name: "the format prefix ignored", codes: is("ack.signature-format-accepted"),
			edits: do(attempts(rolePrefix, "", acked))},
		{name: "a truncated signature accepted and applied", codes: is("ack.signature-truncated-accepted"),
			edits: do(attempts(roleTruncated, "", acked), count("effects", "bad", "evt_cut", 1))},
		{name: "a future timestamp accepted", codes: is("ack.future-accepted"),
			edits: do(attempts(roleFuture, "", acked))},
		{name: "the URL changed, accepted", codes: is("ack.unsigned-url"),
			edits: do(attempts(roleURL, "", acked))},
		{name: "a form field changed, stored", codes: is("ack.unsigned-form"),
			edits: do(count("event_rows", "bad", "evt_form", 1))},
		{name: "a signed header changed, accepted", codes: is("ack.unsigned-header"),
			edits: do(attempts(roleHeader, "", acked))},
		{name: "no signature checked at all", codes: is("ack.unsigned-body", "ack.unsigned-id", "ack.unsigned-timestamp", "ack.wrong-key-accepted",
			"ack.signature-format-accepted", "ack.signature-truncated-accepted", "ack.future-accepted", "ack.unsigned-url", "ack.unsigned-form", "ack.unsigned-header"),
			edits: do(attempts(roleBody, "", acked), attempts(roleID, "", acked), attempts(roleTimestamp, "", acked), attempts(roleKey, "", acked),
				attempts(rolePrefix, "", acked), attempts(roleTruncated, "", acked), attempts(roleAllBad, "", acked), attempts(roleFuture, "", acked),
				attempts(roleURL, "", acked), attempts(roleForm, "", acked), attempts(roleHeader, "", acked))},
		{name: "the valid signature among invalid ones refused", codes: is("ack.boundary-rejected"),
			edits: do(attempts(roleRoll, "", refused(401)))},
		{name: "the valid signature among invalid ones not applied", codes: is("ack.boundary-not-applied"),
			edits: do(count("effects", "boundary", "evt_roll", 0))},
		{name: "the control refused", codes: is("ack.control-rejected"),
			edits: do(attempts("control", "evt_tctl", refused(401)))},
		{name: "the control's row gone by the reconciliation", codes: is("reconcile.lost"),
			edits: do(count("event_rows", "reconcile", "evt_ctl", 0))},
		{name: "no changed delivery", reason: "sent no delivery with a signed input changed",
			edits: do(dropRole("derived:"))},
		{name: "no effects read of the changed deliveries", reason: `has no effects read in phase "bad"`,
			edits: do(drop("effects", "bad", ""))},
		{name: "a role naming only its code, accepted", codes: is("ack.unsigned-body"),
			edits: do(attempts(roleBody, "", acked, func(a *history.Attempt) { a.Role = "derived:ack.unsigned-body" }))},
		{name: "a role naming no code", reason: `names no code of ACK-9`,
			edits: do(attempts(roleBody, "", func(a *history.Attempt) { a.Role = "derived:ack.nonsense body" }))},
		{name: "no control", reason: "sent no valid delivery to hold its expectations against",
			edits: do(dropRole("control"), dropReads("evt_ctl"), dropReads("evt_tctl"))},
	},
})

func TestACK9(t *testing.T) { ack9.run(t) }

// DEDUP-8: an event with a 64-byte ID, one whose ID differs in its last byte,
// one whose ID differs in the case of its first letter.
const (
	idBase = "evt_hcrun1dedup81a2b3c0123456789abcdefghijklmnopqrstuvwxyz012345"
	idLast = "evt_hcrun1dedup81a2b3c0123456789abcdefghijklmnopqrstuvwxyz012344"
	idCase = "Evt_hcrun1dedup81a2b3c0123456789abcdefghijklmnopqrstuvwxyz012345"
)

var dedup8 = register(&table{
	id: "DEDUP-8",
	clean: func() *history.History {
		b, l, c := key(idBase), key(idLast), key(idCase)
		return scenario("DEDUP-8").
			send("identity", b, typeCredit).
			send("identity-last-byte", l, typeCredit).
			send("identity-case", c, typeCredit).
			state("identity", 1, b, l, c).
			reconciled(b, l, c).done()
	},
	cases: []tcase{
		// A unique index on the ID's first 32 bytes: the second is a "duplicate".
		{name: "IDs cut short", codes: is("dedup.identity-truncated", "reconcile.lost"),
			edits: do(count("event_rows", "identity", idLast, 0), count("effects", "identity", idLast, 0),
				count("event_rows", "reconcile", idLast, 0), count("effects", "reconcile", idLast, 0))},
		{name: "IDs cut short, the effect alone lost", codes: is("dedup.identity-truncated"),
			edits: do(count("effects", "identity", idLast, 0))},
		// A case-insensitive key: the third is a "duplicate".
		{name: "case folded", codes: is("dedup.identity-case-folded", "reconcile.lost"),
			edits: do(count("event_rows", "identity", idCase, 0), count("effects", "identity", idCase, 0),
				count("event_rows", "reconcile", idCase, 0), count("effects", "reconcile", idCase, 0))},
		{name: "the first event stored twice", codes: is("dedup.rows", "reconcile.duplicated"),
			edits: do(count("event_rows", "identity", idBase, 2), count("event_rows", "reconcile", idBase, 2))},
		{name: "the first event applied twice", codes: is("dedup.effects"),
			edits: do(count("effects", "identity", idBase, 2))},
		{name: "a twin refused as a duplicate", codes: is("dedup.not-acked"),
			edits: do(attempts("identity-case", "", refused(409)))},
		{name: "two effects at the reconciliation", codes: is("reconcile.applied-twice"),
			edits: do(count("effects", "reconcile", idLast, 2))},
		{name: "an ID without letters: no case twin", build: func() *history.History {
			b, l := key("1234567890"), key("1234567891")
			return scenario("DEDUP-8").
				send("identity", b, typeCredit).
				send("identity-last-byte", l, typeCredit).
				state("identity", 1, b, l).
				reconciled(b, l).done()
		}},
		{name: "no event", reason: "sent no event",
			edits: do(dropRole("identity"))},
		{name: "no read of a twin", reason: `no effects read of (stripe, acct_A, ` + idCase + `) in phase "identity"`,
			edits: do(drop("effects", "identity", idCase))},
	},
})

func TestDEDUP8(t *testing.T) { dedup8.run(t) }
