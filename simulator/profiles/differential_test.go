package profiles

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// trickyStrings exercise every escaping rule of encoding/json: quotes,
// backslashes, HTML-escaped <>&, control characters (short and \u00XX forms),
// DEL, U+2028/U+2029, multi-byte and invalid UTF-8, and the empty string.
var trickyStrings = []string{
	"",
	`quote"d`,
	`back\slash\`,
	"<script>&amp;</script>",
	"caf\u00e9 \u65e5\u672c \U0001F389",
	"\x00\x01\x07\b\f\n\r\t\x0b\x1f\x7f",
	"line\u2028para\u2029end",
	"bad\xffutf8\xfe",
	"cut\xe6\x97",
	"a.b.c.d",
	".lead", "trail.", "..",
	strings.Repeat("long/\"x\"<", 200),
}

func diffEvents() []Event {
	base := Event{
		Source: "src", Account: "acct_A", ID: "evt_1NG8Du2eZvKYlo2CUI79vXWy",
		Type: "payment_intent.succeeded", ObjectID: "pi_123", Version: 3,
		Amount: 1130, Currency: "eur", Status: "succeeded",
		Created: time.Date(2026, 11, 30, 12, 0, 0, 123456789, time.UTC),
	}
	evs := []Event{base}
	for _, s := range trickyStrings {
		for f := 0; f < 7; f++ {
			e := base
			switch f {
			case 0:
				e.Source = s
			case 1:
				e.Account = s
			case 2:
				e.ID = s
			case 3:
				e.Type = s
			case 4:
				e.ObjectID = s
			case 5:
				e.Currency = s
			case 6:
				e.Status = s
			}
			evs = append(evs, e)
		}
	}
	for _, n := range []int64{0, -1, 1, math.MaxInt64, math.MinInt64, 999999999999} {
		e := base
		e.Amount, e.Version = n, -n
		evs = append(evs, e)
	}
	ny, _ := time.LoadLocation("America/New_York")
	for _, c := range []time.Time{
		{},
		time.Unix(0, 0).UTC(),
		time.Unix(-1, 5000).UTC(),
		time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(2026, 3, 1, 1, 2, 3, 0, ny),
		time.Date(2026, 3, 1, 1, 2, 3, 100, time.FixedZone("x", 3600)),
		time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC),
	} {
		e := base
		e.Created = c
		evs = append(evs, e)
	}
	// Everything tricky at once, and everything optional empty.
	all := base
	all.Account, all.Type, all.ObjectID, all.Currency, all.Status = `a"<&>`, "x.\u2028.<y>", "o\\\x00", "\xff", "\t"
	empty := base
	empty.Account, empty.Currency, empty.Status, empty.Version, empty.Amount = "", "", "", 0, 0
	return append(evs, all, empty)
}

func diffAttempts() []Attempt {
	t := time.Date(2026, 11, 30, 12, 0, 5, 987654321, time.UTC)
	return []Attempt{
		{N: 1, SignedAt: t},
		{N: 2, SignedAt: t.Add(time.Hour), DeliveryID: "dlv_1"},
		{N: 3, SignedAt: time.Unix(-77, 0), RetryReason: "http_timeout"},
		{N: 4, SignedAt: t, RetryReason: "bogus<&>"},
		{N: 0, SignedAt: t},
		{N: 1},
		{N: 2, DeliveryID: `d"<`},
	}
}

// diffSecrets returns 1–3 valid secrets for id plus invalid lists.
func diffSecrets(t testing.TB, id string) [][]string {
	var valid []string
	for seed := byte(1); seed <= 3; seed++ {
		s, err := GenerateSecret(id, bytes.NewReader(bytes.Repeat([]byte{seed * 37}, 512)))
		if err != nil {
			t.Fatal(err)
		}
		valid = append(valid, s)
	}
	out := [][]string{valid[:1], valid[:2], valid[:3], nil, {valid[0], ""}, {"not hex or base64 !"}, {"whsec_" + "QUJD"}, {"ABC"}}
	if id == "standard-webhooks" || id == "svix" {
		out = append(out, []string{"whsk_" + "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", valid[1]}, []string{"whsec_"}, []string{"whsk_AAAA"})
	}
	return out
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// compareRender checks one (profile, event, attempt, secrets) against the
// oracle: Render, Body, SignedBody and Headers over an unrelated body.
func compareRender(t *testing.T, p Profile, ev Event, at Attempt, secrets []string) {
	t.Helper()
	id := p.ID()
	where := func() string { return fmt.Sprintf("%s ev=%+v at=%+v nsecrets=%d", id, ev, at, len(secrets)) }
	body, h, err := Render(p, ev, at, secrets)
	wbody, wh, werr := oldRender(id, ev, at, secrets)
	if errString(err) != errString(werr) {
		t.Fatalf("%s: Render error %q, oracle %q", where(), errString(err), errString(werr))
	}
	if !bytes.Equal(body, wbody) {
		t.Fatalf("%s: Render body\n got %s\nwant %s", where(), body, wbody)
	}
	if !reflect.DeepEqual(h, wh) {
		t.Fatalf("%s: Render headers\n got %v\nwant %v", where(), h, wh)
	}
	b, err := p.Body(ev)
	wb, werr := oldBody(id, ev)
	if errString(err) != errString(werr) || !bytes.Equal(b, wb) {
		t.Fatalf("%s: Body\n got %s %v\nwant %s %v", where(), b, err, wb, werr)
	}
	if bs, ok := p.(BodySigner); ok {
		sb, err := bs.SignedBody(ev, secrets)
		wsb, werr := oldAdyenSignedBody(id, ev, secrets)
		if errString(err) != errString(werr) || !bytes.Equal(sb, wsb) {
			t.Fatalf("%s: SignedBody\n got %s %v\nwant %s %v", where(), sb, err, wsb, werr)
		}
	}
	// The engine signs altered bodies too (malformed, padded, tampered).
	for _, other := range [][]byte{nil, []byte(`{"x":1`), wb} {
		hh, err := p.Headers(ev, other, at, secrets)
		wh, werr := oldHeaders(id, ev, other, at, secrets)
		if errString(err) != errString(werr) || !reflect.DeepEqual(hh, wh) {
			t.Fatalf("%s: Headers(%q)\n got %v %v\nwant %v %v", where(), other, hh, err, wh, werr)
		}
	}
}

// TestRenderMatchesOracle: every profile × tricky events × attempts × 1–3
// secrets (and invalid ones) gives byte-identical bodies, identical headers
// and identical errors to the previous implementation.
func TestRenderMatchesOracle(t *testing.T) {
	evs := diffEvents()
	ats := diffAttempts()
	n := 0
	for _, p := range goProfiles() {
		secretSets := diffSecrets(t, p.ID())
		for _, ev := range evs {
			evVariants := []Event{ev}
			if strings.HasPrefix(p.ID(), "adyen") {
				// Adyen accepts no ID or the derived one.
				a, b := ev, ev
				a.ID, b.ID = "", ev.ObjectID+":"+ev.Type+":true"
				evVariants = append(evVariants, a, b)
			}
			for _, e := range evVariants {
				for _, at := range ats {
					for _, ss := range secretSets {
						compareRender(t, p, e, at, ss)
						n++
					}
				}
			}
		}
	}
	t.Logf("%d renders compared with the oracle", n)
}

// FuzzRenderMatchesOracle compares Render with the oracle on arbitrary events,
// attempts and secrets.
func FuzzRenderMatchesOracle(f *testing.F) {
	ids := goIDs()
	f.Add(uint8(0), "acct_A", "evt_1", "payment_intent.succeeded", "pi_1", "eur", "succeeded", int64(3), int64(1130), int64(1700000000123456789), 1, "", "", int64(1700000005), uint8(1), uint8(1))
	f.Add(uint8(4), `a"<&>`, "x\\y", "a.b.<c>", "\x00\u2028", "\xff", "", int64(-5), int64(math.MaxInt64), int64(-1), 3, `d"`, "http_timeout", int64(-9), uint8(7), uint8(3))
	f.Fuzz(func(t *testing.T, pi uint8, account, id, typ, objectID, currency, status string, version, amount, created int64, n int, deliveryID, reason string, signedAt int64, seed, nsec uint8) {
		p := registry[ids[int(pi)%len(ids)]]
		ev := Event{Source: p.ID(), Account: account, ID: id, Type: typ, ObjectID: objectID,
			Version: version, Amount: amount, Currency: currency, Status: status, Created: time.Unix(0, created).UTC()}
		at := Attempt{N: n, DeliveryID: deliveryID, RetryReason: reason, SignedAt: time.Unix(signedAt, 0)}
		var secrets []string
		for i := 0; i < int(nsec%4); i++ {
			// A seeded stream: GenerateSecret rejects bytes out of its alphabet's
			// range, so a run of one repeated byte could exhaust any finite input.
			s, err := GenerateSecret(p.ID(), rand.NewChaCha8([32]byte{seed, byte(i)}))
			if err != nil {
				t.Fatal(err)
			}
			secrets = append(secrets, s)
		}
		compareRender(t, p, ev, at, secrets)
		if strings.HasPrefix(p.ID(), "adyen") {
			ev.ID = ""
			compareRender(t, p, ev, at, secrets)
		}
	})
}

// BenchmarkRender measures one delivery's rendering per profile, the previous
// implementation (old) beside the current one (new) in the same run.
func BenchmarkRender(b *testing.B) {
	for _, p := range goProfiles() {
		id := p.ID()
		ev := testEvent(id)
		if strings.HasPrefix(id, "adyen") {
			ev.ID = ""
		}
		at := Attempt{N: 2, SignedAt: time.Unix(1_800_000_000, 0), RetryReason: "http_timeout"}
		s, err := GenerateSecret(id, bytes.NewReader(bytes.Repeat([]byte{9}, 512)))
		if err != nil {
			b.Fatal(err)
		}
		secrets := []string{s}
		var sink int
		b.Run(id+"/old", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				body, h, err := oldRender(id, ev, at, secrets)
				if err != nil {
					b.Fatal(err)
				}
				sink += len(body) + len(h)
			}
		})
		b.Run(id+"/new", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				body, h, err := Render(p, ev, at, secrets)
				if err != nil {
					b.Fatal(err)
				}
				sink += len(body) + len(h)
			}
		})
		_ = sink
	}
}

// headerKeysCanonical guards the direct map assignments: every header key a
// profile sets is already in canonical form, so h.Get finds it.
func TestHeaderKeysCanonical(t *testing.T) {
	for _, p := range goProfiles() {
		ev := testEvent(p.ID())
		if strings.HasPrefix(p.ID(), "adyen") {
			ev.ID = ""
		}
		_, h := renderFor(t, p, ev, Attempt{N: 2, SignedAt: time.Unix(1, 0)}, []string{secretFor(t, p.ID(), 5)})
		for k := range h {
			if k != http.CanonicalHeaderKey(k) {
				t.Errorf("%s: header key %q is not canonical (%q)", p.ID(), k, http.CanonicalHeaderKey(k))
			}
		}
	}
}

// TestAppendBase36MatchesBigInt checks the limb-wise base-36 writer against
// big.Int.Text(36) (the former base36Hash) on hashes and on small, zero and
// all-ones numbers, for several output lengths.
func TestAppendBase36MatchesBigInt(t *testing.T) {
	var cases [][32]byte
	for i := 0; i < 200; i++ {
		cases = append(cases, sha256.Sum256([]byte{byte(i), byte(i >> 8)}))
	}
	var zero, one, ones, top [32]byte
	one[31] = 1
	for i := range ones {
		ones[i] = 0xff
	}
	top[0] = 0x80
	small := [32]byte{}
	small[24], small[31] = 0x12, 0x34 // a number just above 2^64
	cases = append(cases, zero, one, ones, top, small)
	for _, c := range cases {
		for _, n := range []int{1, 12, 26, 50, 60} {
			want := new(big.Int).SetBytes(c[:]).Text(36)
			for len(want) < n {
				want = "0" + want
			}
			want = want[:n]
			if got := string(appendBase36(nil, &c, n)); got != want {
				t.Fatalf("appendBase36(%x, %d) = %q, want %q", c, n, got, want)
			}
		}
	}
}

// TestFormatUUIDMatchesOracle checks the stack-built UUID formatter against the
// former hex-and-concatenate one.
func TestFormatUUIDMatchesOracle(t *testing.T) {
	for i := 0; i < 300; i++ {
		sum := sha256.Sum256([]byte{byte(i), byte(i >> 8), 'u'})
		if got, want := formatUUID(sum[:16]), oldFormatUUID(sum[:16]); got != want {
			t.Fatalf("formatUUID(%x) = %s, want %s", sum[:16], got, want)
		}
	}
}

// TestPooledMACsConcurrentAndBounded: goroutines signing at once with shared
// and distinct secrets get the oracle's output (no state leaks between pooled
// HMACs), and more distinct secrets than the cache holds still sign correctly.
func TestPooledMACsConcurrentAndBounded(t *testing.T) {
	ev := testEvent("stripe")
	at := Attempt{N: 1, SignedAt: time.Unix(1_800_000_000, 0)}
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < maxMACKeys/2+20; i++ {
				// Half the secrets are shared by all goroutines, half are per
				// goroutine; together they exceed maxMACKeys.
				secrets := []string{fmt.Sprintf("shared-%d", i%8), fmt.Sprintf("own-%d-%d", g, i)}
				for _, p := range goProfiles() {
					e := ev
					if strings.HasPrefix(p.ID(), "adyen") {
						e.ID = ""
						secrets = []string{fmt.Sprintf("%02X%02X", g, i%256)}
					}
					if p.ID() == "standard-webhooks" || p.ID() == "svix" {
						secrets = []string{"whsec_" + base64.StdEncoding.EncodeToString([]byte(secrets[0]))}
					}
					body, h, err := Render(p, e, at, secrets)
					wb, wh, werr := oldRender(p.ID(), e, at, secrets)
					if errString(err) != errString(werr) || !bytes.Equal(body, wb) || !reflect.DeepEqual(h, wh) {
						select {
						case errs <- fmt.Sprintf("%s goroutine %d secret %d: differs from the oracle", p.ID(), g, i):
						default:
						}
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	for k := range macCache {
		if mp := macCache[k].Load(); mp != nil && len(*mp) > maxMACKeys {
			t.Errorf("MAC cache kind %d holds %d secrets, limit %d", k, len(*mp), maxMACKeys)
		}
	}
}
