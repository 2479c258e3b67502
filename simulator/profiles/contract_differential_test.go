package profiles

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

// goBacked are the providers with a Go profile and a data file: the two must
// send the same bytes.
var goBacked = []string{"stripe", "github", "shopify", "standard-webhooks", "svix", "slack", "paddle"}

// goProfiles are the registry's Go profiles (the seven with a data file and
// Adyen's two), sorted by ID: the subject of the tests written for them
// (oracle, domain, verdicts), which All() no longer is once the registry
// serves contracts without a Go profile.
func goProfiles(t testing.TB) []Profile {
	t.Helper()
	var out []Profile
	for _, p := range All() {
		if unwrapContract(p) == nil {
			out = append(out, p)
		}
	}
	if len(out) != len(goBacked)+2 {
		t.Fatalf("%d Go profiles, want %d", len(out), len(goBacked)+2)
	}
	return out
}

// contractOnly builds the contract profile of a built-in ID (not the Go one
// the registry serves).
func contractOnly(t testing.TB, id string) Profile {
	t.Helper()
	c, ok := ContractOf(id)
	if !ok {
		t.Fatalf("%s: no embedded contract", id)
	}
	p, err := NewContractProfile(c, nil)
	if err != nil {
		t.Fatalf("%s: %v", id, err)
	}
	if _, isGo := p.(interface{ derivedEventID(Event) string }); isGo {
		t.Fatal("contract profile is not the engine's")
	}
	return p
}

// declaredObjects are business objects a target may declare, verbatim.
var declaredObjects = []json.RawMessage{
	json.RawMessage(`{"id":"sub_1","status":"active","items":[1,2,{"x":null}]}`),
	json.RawMessage(" \n{ \"spaced\" : true , \"nested\": {\"a\": \"<&>\"} }\t"),
	json.RawMessage(`{}`),
	json.RawMessage(`{"unicode":"caf\u00e9 \u2028","escaped":"\"q\\"}`),
}

// seededEvents draws events with random IDs in the provider's shape, random
// strings from the tricky set and random numbers and times.
func seededEvents(t testing.TB, id string, seed uint64, n int) []Event {
	r := rand.New(rand.NewPCG(seed, 7))
	pick := func() string { return trickyStrings[r.IntN(len(trickyStrings))] }
	var out []Event
	for i := 0; i < n; i++ {
		evID, err := NewEventID(id, r)
		if err != nil {
			t.Fatal(err)
		}
		ev := Event{Source: id, Account: fmt.Sprintf("acct_%d", r.IntN(5)), ID: evID, Type: "payment_intent.succeeded",
			ObjectID: fmt.Sprintf("obj_%x", r.Uint64()), Version: r.Int64N(1000) - 10, Amount: r.Int64() - r.Int64(),
			Currency: "usd", Status: "succeeded",
			Created: time.Unix(r.Int64N(4_000_000_000)-1_000_000_000, r.Int64N(1_000_000_000)).In(time.FixedZone("z", 3600*r.IntN(5)))}
		switch r.IntN(6) {
		case 0:
			ev.Type = pick()
		case 1:
			ev.Account = pick()
		case 2:
			ev.Status, ev.Currency = pick(), pick()
		case 3:
			ev.ID = pick()
		}
		if r.IntN(4) == 0 {
			ev.Object = declaredObjects[r.IntN(len(declaredObjects))]
		}
		out = append(out, ev)
	}
	return out
}

func errPresence(err error) string {
	if err == nil {
		return "ok"
	}
	return "error"
}

// compareWithContract checks one (event, attempt, secrets) through both
// profiles: the same error presence, byte-identical bodies, identical
// headers, also over bodies the engine alters (malformed, tampered).
func compareWithContract(t *testing.T, goP, cp Profile, ev Event, at Attempt, secrets []string) bool {
	t.Helper()
	where := func() string {
		return fmt.Sprintf("%s ev=%+v at=%+v nsecrets=%d", goP.ID(), ev, at, len(secrets))
	}
	body, h, err := Render(goP, ev, at, secrets)
	cbody, ch, cerr := Render(cp, ev, at, secrets)
	if errPresence(err) != errPresence(cerr) {
		t.Errorf("%s: Render error: Go %v, contract %v", where(), err, cerr)
		return false
	}
	if !bytes.Equal(body, cbody) {
		t.Errorf("%s: body\n   Go %s\ncontract %s", where(), body, cbody)
		return false
	}
	if !reflect.DeepEqual(h, ch) {
		t.Errorf("%s: headers\n   Go %v\ncontract %v", where(), h, ch)
		return false
	}
	for _, other := range [][]byte{nil, []byte(`{"x":1`), body} {
		gh, err := goP.Headers(ev, other, at, secrets)
		hh, cerr := cp.Headers(ev, other, at, secrets)
		if errPresence(err) != errPresence(cerr) || !reflect.DeepEqual(gh, hh) {
			t.Errorf("%s: Headers(%q)\n   Go %v %v\ncontract %v %v", where(), other, gh, err, hh, cerr)
			return false
		}
	}
	return true
}

// TestContractsMatchGoProfiles: each Go profile and the contract engine
// reading its data file render many seeded and hostile events, attempts and
// secrets (rolls of one to three, invalid ones, declared objects) to
// byte-identical bodies and identical headers, fail on the same inputs, and
// read every status with and without stop headers alike.
func TestContractsMatchGoProfiles(t *testing.T) {
	for _, id := range goBacked {
		t.Run(id, func(t *testing.T) {
			goP, cp := mustLookup(t, id), contractOnly(t, id)
			evs := diffEvents()
			for _, ev := range diffEvents()[:20] {
				for _, o := range declaredObjects {
					ev.Object = o
					evs = append(evs, ev)
				}
			}
			ats := append(diffAttempts(),
				Attempt{N: 2, SignedAt: time.Unix(1_800_000_000, 5), RetryReason: "ssl_error", URL: "https://r.example/h?a=1", Method: "POST"},
				Attempt{N: 7, SignedAt: time.Unix(1_800_000_000, 0), DeliveryID: "5d1e7c3a-0000-4000-8000-000000000000"})
			secretSets := diffSecrets(t, id)
			n, failures := 0, 0
			check := func(ev Event, at Attempt, ss []string) {
				n++
				if !compareWithContract(t, goP, cp, ev, at, ss) {
					if failures++; failures > 5 {
						t.Fatal("too many differences")
					}
				}
			}
			// Every event with every attempt (one secret, then a roll of
			// two) and with every secret list (first attempt).
			for _, ev := range evs {
				for _, at := range ats {
					check(ev, at, secretSets[0])
					check(ev, at, secretSets[1])
				}
				for _, ss := range secretSets[2:] {
					check(ev, ats[0], ss)
				}
			}
			// Seeded events, each with a drawn attempt and secret list.
			r := rand.New(rand.NewPCG(11, 11))
			for _, ev := range seededEvents(t, id, 1, 400) {
				check(ev, ats[r.IntN(len(ats))], secretSets[r.IntN(len(secretSets))])
			}
			t.Logf("%d renders compared", n)
			compareVerdicts(t, goP, cp)
			compareFacts(t, goP.Facts(), cp.Facts())
		})
	}
}

func compareVerdicts(t *testing.T, goP, cp Profile) {
	t.Helper()
	headers := []http.Header{
		nil, {},
		hdr("X-Slack-No-Retry", "1"), hdr("X-Slack-No-Retry", " 1 "), hdr("X-Slack-No-Retry", "0"),
		hdr("Webhook-Delivery", "abort-message"), hdr("Webhook-Delivery", " ABORT-Message "), hdr("Webhook-Delivery", "retry"),
		hdr("Retry-After", "5"),
	}
	for status := 100; status <= 599; status++ {
		for _, h := range headers {
			for _, body := range [][]byte{nil, []byte("[accepted]")} {
				if g, c := goP.Verdict(status, h, body), cp.Verdict(status, h, body); g != c {
					t.Errorf("%s: Verdict(%d, %v): Go %v, contract %v", goP.ID(), status, h, g, c)
				}
			}
		}
	}
}

// compareFacts holds the contract's facts to the Go profile's. The three
// summaries are written from the data and read differently; everything
// else, sources and notes included, must be equal.
func compareFacts(t *testing.T, g, c Facts) {
	t.Helper()
	if c.SignatureScheme == "" || c.SuccessRule == "" || c.AccountLocation == "" {
		t.Errorf("contract summaries missing: %q %q %q", c.SignatureScheme, c.SuccessRule, c.AccountLocation)
	}
	g.SignatureScheme, g.SuccessRule, g.AccountLocation = "", "", ""
	c.SignatureScheme, c.SuccessRule, c.AccountLocation = "", "", ""
	if !reflect.DeepEqual(g, c) {
		gv, cv := reflect.ValueOf(g), reflect.ValueOf(c)
		for i := 0; i < gv.NumField(); i++ {
			if !reflect.DeepEqual(gv.Field(i).Interface(), cv.Field(i).Interface()) {
				t.Errorf("Facts.%s: Go %s, contract %s", gv.Type().Field(i).Name, show(gv.Field(i)), show(cv.Field(i)))
			}
		}
	}
}

func show(v reflect.Value) string {
	if v.Kind() == reflect.Pointer && !v.IsNil() {
		return fmt.Sprintf("&%v", v.Elem().Interface())
	}
	return fmt.Sprintf("%#v", v.Interface())
}

// The registry's Go profiles carry their contract's inputs and handshake.
func TestGoProfilesCarryTheirContract(t *testing.T) {
	for _, id := range goBacked {
		goP, cp := mustLookup(t, id), contractOnly(t, id)
		gl, ok := goP.(InputLister)
		if !ok {
			t.Fatalf("%s: the Go profile lists no inputs", id)
		}
		if !reflect.DeepEqual(gl.Inputs(), cp.(InputLister).Inputs()) {
			t.Errorf("%s: inputs differ:\n   Go %+v\ncontract %+v", id, gl.Inputs(), cp.(InputLister).Inputs())
		}
		_, goHS := goP.(Handshaker)
		_, cHS := cp.(Handshaker)
		if goHS != cHS {
			t.Errorf("%s: Handshaker: Go %v, contract %v", id, goHS, cHS)
		}
		_, goD := goP.(DeliveryIDMaker)
		_, cD := cp.(DeliveryIDMaker)
		if goD != cD {
			t.Errorf("%s: DeliveryIDMaker: Go %v, contract %v", id, goD, cD)
		}
		if goD {
			a := goP.(DeliveryIDMaker).MakeDeliveryID(rand.New(rand.NewPCG(3, 3)))
			b := cp.(DeliveryIDMaker).MakeDeliveryID(rand.New(rand.NewPCG(3, 3)))
			if a != b {
				t.Errorf("%s: delivery IDs differ: %s %s", id, a, b)
			}
		}
		// Event IDs and secrets come from the data for both.
		r1, r2 := rand.New(rand.NewPCG(9, 9)), rand.New(rand.NewPCG(9, 9))
		for i := 0; i < 20; i++ {
			a, err := NewEventID(id, r1)
			if err != nil {
				t.Fatal(err)
			}
			if b := cp.(EventIDMaker).MakeEventID(r2); a != b {
				t.Errorf("%s: event IDs differ: %s %s", id, a, b)
			}
		}
		src := func() *bytes.Reader { return bytes.NewReader(bytes.Repeat([]byte{7, 250, 19, 200}, 64)) }
		a, err := GenerateSecret(id, src())
		if err != nil {
			t.Fatal(err)
		}
		if b, err := cp.(SecretMaker).MakeSecret(src()); err != nil || a != b {
			t.Errorf("%s: secrets differ (%v)", id, err)
		}
	}
	if _, ok := mustLookup(t, "slack").(Handshaker); !ok {
		t.Error("slack: no handshake")
	}
}

func TestBuiltinContractsAreTheGoProfilesPlusData(t *testing.T) {
	for _, p := range goProfiles(t) {
		if _, ok := ContractOf(p.ID()); !ok && !strings.HasPrefix(p.ID(), "adyen") {
			t.Errorf("%s: a Go profile without its data file", p.ID())
		}
	}
	for _, c := range Contracts() {
		p := mustLookup(t, c.ID)
		if unwrapContract(p) == nil && !strings.Contains(strings.Join(goBacked, " "), c.ID) {
			t.Errorf("%s: served by neither the engine nor a Go profile", c.ID)
		}
	}
}
