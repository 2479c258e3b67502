package sink

import (
	"bytes"
	"fmt"
	"net/http"
	"reflect"
	"testing"
)

// postTo sends body to s with key, and fails t unless it was answered.
func postTo(t testing.TB, s *Sink, key, body string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.URL(), bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set(HeaderIdempotencyKey, key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

func seqs(cs []Call) []int {
	var out []int
	for _, c := range cs {
		out = append(out, c.Seq)
	}
	return out
}

// MatchingEach gives each ID the calls Matching gives it, whether the ID is
// a whole JSON value, a key or inside a value of the body, in a body that is
// not JSON, or the operation key.
func TestMatchingEach(t *testing.T) {
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	postTo(t, s, "k1", `{"event_id":"evt_a","nested":{"ids":["evt_b"]}}`)
	postTo(t, s, "k1c", `{"evt_c":1}`)
	postTo(t, s, "k2", `{"note":"refund for evt_d, twice"}`)
	postTo(t, s, "k3", `not json evt_e`)
	postTo(t, s, "evt_f", `{}`)
	postTo(t, s, "k5", `{"event_id":"evt_a"}`)
	ids := []string{"evt_a", "evt_b", "evt_c", "evt_d", "evt_e", "evt_f", "evt_none"}
	got := s.MatchingEach(ids)
	for _, id := range ids {
		if want := seqs(s.Matching(id)); !reflect.DeepEqual(seqs(got[id]), want) {
			t.Errorf("%s: MatchingEach %v, Matching %v", id, seqs(got[id]), want)
		}
	}
}

// One pass over the calls, not one per ID (Matching's cost).
func BenchmarkMatchingEach(b *testing.B) {
	s, err := New()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var ids []string
	for i := range 2000 {
		id := fmt.Sprintf("evt_hcrun%dsoak%dw%dn%06x", i%7, i%32, i/32, i*7919&0xffffff)
		ids = append(ids, id)
		postTo(b, s, fmt.Sprintf("hookcert-credit-%040x", i), fmt.Sprintf(`{"source":"stripe","account_id":"acct_A","event_id":%q,"object_id":"obj_%d","amount":1234,"currency":"usd"}`, id, i))
	}
	b.Run("MatchingEach", func(b *testing.B) {
		for b.Loop() {
			_ = s.MatchingEach(ids)
		}
	})
	b.Run("Matching", func(b *testing.B) {
		for b.Loop() {
			for _, id := range ids {
				_ = s.Matching(id)
			}
		}
	})
}
