package reference

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hookcert/hookcert/reference/store"
)

// Slack deliveries, the url_verification handshake, and the defects the
// harness's derived checks (ACK-8, ACK-9, DEDUP-8) catch, on real PostgreSQL.

// handshake builds Slack's url_verification for ep, signed at signedAt.
func handshake(ep Endpoint, challenge string, signedAt time.Time) delivery {
	d := delivery{ep: ep, header: http.Header{"Content-Type": {"application/json"}},
		body: mustJSON(map[string]any{"token": "", "challenge": challenge, "type": "url_verification"})}
	d.sign(signedAt)
	return d
}

// raw posts d and returns the status and the body as received.
func (e *env) raw(d delivery) (int, string) {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.http.URL+d.ep.Path, bytes.NewReader(d.body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header = d.header.Clone()
	resp, err := e.http.Client().Do(req)
	if err != nil {
		e.t.Fatalf("POST %s: %v", d.ep.Path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// handshakeRows counts the event rows a handshake to ep could have left.
func (e *env) handshakeRows(ep Endpoint) int {
	return e.count(`SELECT count(*) FROM processed_webhook_events WHERE source=$1 AND account_id=$2 AND event_id=''`, ep.KeySource(), ep.Account)
}

func TestSlackDeliveryAndHandshake(t *testing.T) {
	e := newEnv(t, Options{})
	ep := e.ep("slack", "acct_A")
	id := newID("Ev")
	e.expect(e.send(build(ep, id, store.TypeCashBalance, obj{ID: "cb_slack", Amount: 5}, time.Now())), 200, StatusProcessed, "")
	e.expect(e.send(build(ep, id, store.TypeCashBalance, obj{ID: "cb_slack", Amount: 5}, time.Now())), 200, StatusDuplicate, "")
	if e.keyRows(ep, id) != 1 || e.ledger(ep, id) != 1 {
		t.Fatalf("a Slack event: %d rows, %d effects, want 1 and 1", e.keyRows(ep, id), e.ledger(ep, id))
	}
	stale := build(ep, newID("Ev"), store.TypeCashBalance, obj{ID: "cb_slack2", Amount: 5}, time.Now().Add(-time.Hour))
	e.expect(e.send(stale), 401, StatusRejected, "stale_timestamp")

	// The handshake: the challenge as plain text, nothing stored.
	code, body := e.raw(handshake(ep, "chal_3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P", time.Now()))
	if code != 200 || body != "chal_3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" {
		t.Fatalf("handshake answered %d %q, want 200 and the challenge", code, body)
	}
	// Badly signed: refused like any forged request.
	bad := handshake(ep, "chal_forged", time.Now())
	bad.header.Set("X-Slack-Signature", "v0="+strings.Repeat("0", 64))
	if code, body := e.raw(bad); code != 401 || strings.Contains(body, "chal_forged") {
		t.Fatalf("a badly signed handshake answered %d %q, want 401 without the challenge", code, body)
	}
	if n := e.handshakeRows(ep) + e.keyRows(ep, "chal_3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P") + e.keyRows(ep, "chal_forged"); n != 0 {
		t.Fatalf("%d event rows after handshakes, want 0", n)
	}
	// Another profile's endpoint knows no handshake: the same body is an event without an ID.
	other := handshake(e.ep("github", "acct_A"), "chal_x", time.Now())
	other.header.Set("X-GitHub-Event", "url_verification")
	other.sign(time.Now())
	if code, _ := e.raw(other); code != 400 {
		t.Fatalf("a url_verification body to a GitHub endpoint answered %d, want 400", code)
	}
}

func TestDefectHandshakeEchoWrong(t *testing.T) {
	e := newEnv(t, Options{Defects: []string{DefectHandshakeEchoWrong}})
	ep := e.ep("slack", "acct_A")
	code, body := e.raw(handshake(ep, "chal_q", time.Now()))
	if code != 200 || body != `"chal_q"` {
		t.Fatalf("answered %d %q, want 200 and the challenge as a JSON string", code, body)
	}
}

func TestDefectHandshakeUnsigned(t *testing.T) {
	for _, defects := range [][]string{nil, {DefectHandshakeUnsigned}} {
		e := newEnv(t, Options{Defects: defects})
		ep := e.ep("slack", "acct_A")
		bad := handshake(ep, "chal_forged", time.Now())
		bad.header.Set("X-Slack-Signature", "v0="+strings.Repeat("0", 64))
		code, body := e.raw(bad)
		if defects == nil && code != 401 || defects != nil && (code != 200 || body != "chal_forged") {
			t.Fatalf("defects %v: a badly signed handshake answered %d %q", defects, code, body)
		}
		// Events are still verified.
		d := build(ep, newID("Ev"), store.TypeCashBalance, obj{ID: "cb", Amount: 1}, time.Now())
		d.header.Set("X-Slack-Signature", "v0="+strings.Repeat("0", 64))
		e.expect(e.send(d), 401, StatusRejected, "bad_signature")
	}
}

func TestDefectHandshakeAsEvent(t *testing.T) {
	e := newEnv(t, Options{Defects: []string{DefectHandshakeAsEvent}})
	ep := e.ep("slack", "acct_A")
	if code, body := e.raw(handshake(ep, "chal_e", time.Now())); code != 200 || body != "chal_e" {
		t.Fatalf("answered %d %q, want 200 and the challenge", code, body)
	}
	if n := e.keyRows(ep, "chal_e"); n != 1 {
		t.Fatalf("%d event rows under the challenge after a handshake, want the defect's 1", n)
	}
}

// The signature defects each accept exactly their mistake, on every profile
// that has what they get wrong; the clean reference refuses it.
func TestDefectsOfTheSignature(t *testing.T) {
	half := func(h http.Header, name, prefix string) {
		v := h.Get(name)
		i := strings.LastIndex(v, prefix) + len(prefix)
		h.Set(name, v[:i+(len(v)-i)/2])
	}
	reprefix := func(h http.Header, name, from, to string) { h.Set(name, strings.Replace(h.Get(name), from, to, 1)) }
	type change struct {
		profile string
		apply   func(d *delivery)
	}
	for _, c := range []struct {
		defect  string
		changes []change
	}{
		{DefectSignaturePrefixCompare, []change{
			{"stripe", func(d *delivery) { half(d.header, "Stripe-Signature", "v1=") }},
			{"standard-webhooks", func(d *delivery) { half(d.header, "webhook-signature", "v1,") }},
			{"github", func(d *delivery) { half(d.header, "X-Hub-Signature-256", "sha256=") }},
			{"slack", func(d *delivery) { half(d.header, "X-Slack-Signature", "v0=") }},
		}},
		{DefectSignatureAnyScheme, []change{
			{"stripe", func(d *delivery) { reprefix(d.header, "Stripe-Signature", "v1=", "v0=") }},
			{"svix", func(d *delivery) { reprefix(d.header, "svix-signature", "v1,", "v0,") }},
			{"github", func(d *delivery) { reprefix(d.header, "X-Hub-Signature-256", "sha256=", "sha257=") }},
			{"slack", func(d *delivery) { reprefix(d.header, "X-Slack-Signature", "v0=", "v1=") }},
		}},
		{DefectFutureTimestamps, []change{
			{"standard-webhooks", func(d *delivery) { d.sign(time.Now().Add(time.Hour)) }},
			{"svix", func(d *delivery) { d.sign(time.Now().Add(time.Hour)) }},
			{"slack", func(d *delivery) { d.sign(time.Now().Add(time.Hour)) }},
		}},
	} {
		t.Run(c.defect, func(t *testing.T) {
			for _, defects := range [][]string{nil, {c.defect}} {
				e := newEnv(t, Options{Defects: defects})
				for _, ch := range c.changes {
					ep := e.ep(ch.profile, "acct_A")
					id := newID("evt")
					d := build(ep, id, store.TypeCashBalance, obj{ID: "cb_" + id, Amount: 1}, time.Now())
					ch.apply(&d)
					r := e.send(d)
					if defects == nil && (r.Code != 401 || e.keyRows(ep, id) != 0) || defects != nil && (r.Code != 200 || e.ledger(ep, id) != 1) {
						t.Errorf("defects %v, %s: answered %d %s/%s, %d row(s)", defects, ch.profile, r.Code, r.Status, r.Reason, e.keyRows(ep, id))
					}
				}
			}
		})
	}
}

// id-truncated and id-case-folded drop an event whose ID differs from
// another's only past 48 bytes, or only in case; the clean reference stores
// and applies both.
func TestDefectsOfTheEventIdentity(t *testing.T) {
	base := "evt_" + strings.Repeat("a1", 30) // 64 bytes
	twins := map[string]string{DefectIDTruncated: base[:63] + "b", DefectIDCaseFolded: "E" + base[1:]}
	for _, defect := range []string{DefectIDTruncated, DefectIDCaseFolded} {
		for _, defects := range [][]string{nil, {defect}} {
			e := newEnv(t, Options{Defects: defects})
			ep := e.ep("stripe", "acct_A")
			e.expect(e.send(build(ep, base, store.TypeCashBalance, obj{ID: "cb_1", Amount: 1}, time.Now())), 200, StatusProcessed, "")
			twin := twins[defect]
			r := e.send(build(ep, twin, store.TypeCashBalance, obj{ID: "cb_2", Amount: 1}, time.Now()))
			want, rows := StatusProcessed, 1
			if defects != nil {
				want, rows = StatusDuplicate, 0
			}
			if r.Code != 200 || r.Status != want || e.keyRows(ep, twin) != rows || e.ledger(ep, twin) != rows {
				t.Errorf("defects %v: the twin answered %d %s, %d row(s), %d effect(s); want %s, %d", defects, r.Code, r.Status, e.keyRows(ep, twin), e.ledger(ep, twin), want, rows)
			}
			// Shorter IDs, and IDs of another account, are not touched.
			if defects != nil {
				for _, id := range []string{"evt_short_A", "evt_short_a"} {
					e.expect(e.send(build(ep, id, store.TypeCashBalance, obj{ID: "cb_" + id, Amount: 1}, time.Now())), 200, map[bool]string{true: StatusDuplicate, false: StatusProcessed}[defect == DefectIDCaseFolded && id == "evt_short_a"], "")
				}
				e.expect(e.send(build(e.ep("stripe", "acct_B"), twin, store.TypeCashBalance, obj{ID: "cb_3", Amount: 1}, time.Now())), 200, StatusProcessed, "")
			}
		}
	}
}

func TestHandshakeDefectsExcludeEachOther(t *testing.T) {
	err := ValidateDefects([]string{DefectHandshakeEchoWrong, DefectHandshakeAsEvent})
	if err == nil || !strings.Contains(err.Error(), "each replaces how a handshake is answered") {
		t.Fatalf("got %v", err)
	}
	if err := ValidateDefects([]string{DefectIDTruncated, DefectGlobalEventID}); err == nil {
		t.Fatal("two key modes accepted together")
	}
}
