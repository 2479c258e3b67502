package cli

import (
	"strings"
	"testing"

	"github.com/hookcert/hookcert/adapters/targetfile"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// A query using a parameter its reads pass empty draws a warning naming the
// query, the parameter and the guarantees reading it; one keyed on what its
// reads bind draws none.
func TestUnboundWarnings(t *testing.T) {
	src := func(eventRows string) []byte {
		return []byte(`target:
  name: unbound
  base_url: http://127.0.0.1:1
  endpoints:
    - {profile: stripe, account: acct_A, path: /a, secret: whsec_unbound_warn_A}
  observe:
    postgres:
      url: postgres://u@127.0.0.1/db
      queries:
        event_rows: ` + eventRows + `
        effects: SELECT count(*) FROM ledger WHERE event_id = $3 AND object_id = $4
`)
	}
	tg, err := targetfile.Inspect(src("SELECT count(*) FROM events WHERE event_id = $3 AND object_id = $4"), profiles.IDs())
	if err != nil {
		t.Fatal(err)
	}
	ws := unboundWarnings(tg)
	if len(ws) != 1 {
		t.Fatalf("warnings = %v, want one for event_rows", ws)
	}
	w := ws[0]
	for _, want := range []string{"target.observe.postgres.queries.event_rows", "DEDUP-1", "every guarantee's reconciliation",
		"$4 (object ID)", "they bind $1 $2 $3 only", "key the query on what its reads bind ($1 $2 $3)"} {
		if !strings.Contains(w.String(), want) {
			t.Errorf("warning lacks %q: %s", want, w)
		}
	}
	if tg, err = targetfile.Inspect(src("SELECT count(*) FROM events WHERE event_id = $3"), profiles.IDs()); err != nil {
		t.Fatal(err)
	}
	if ws := unboundWarnings(tg); len(ws) != 0 {
		t.Errorf("warnings for a file keyed on what its reads bind: %v", ws)
	}
}
