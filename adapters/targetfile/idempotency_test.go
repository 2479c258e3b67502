package targetfile

import (
	"strings"
	"testing"

	"github.com/hookcert/hookcert/vocab"
)

// ledgerless is an object-version receiver: no event_rows, no effects, an
// ordered role whose objects carry the key of the last update applied.
const ledgerless = `target:
  name: ledgerless
  base_url: http://127.0.0.1:{{.Port}}
  idempotency: object-version
  endpoints:
    - {profile: stripe, account: acct_a, path: /webhooks, secret: whsec_ledgerless_test}
  observe:
    postgres:
      url: "{{.DatabaseURL}}"
  events:
    ordered:
      type: customer.subscription.updated
      id_prefix: sub
      key: created
      ties: last-wins
      object: '{"id": "{{.ObjectID}}", "object": "subscription", "status": "active", "metadata": {"tag": "{{.Tag}}"}}'
      state: SELECT extract(epoch FROM last_synced_at)::bigint, tag FROM subscriptions WHERE id = $4
      children: SELECT min(extract(epoch FROM last_synced_at))::bigint FROM subscription_items WHERE subscription = $4
`

func TestIdempotencyObjectVersion(t *testing.T) {
	tg, err := Parse([]byte(ledgerless), testVars)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if tg.Idempotency != IdempotencyObjectVersion || !tg.Ledgerless() {
		t.Errorf("Idempotency = %q", tg.Idempotency)
	}
	o := tg.Events.Ordered
	if o.Ties != vocab.TiesLastWins || !o.Tagged || !o.Children {
		t.Errorf("ordered = %+v", o)
	}
	q := tg.Store.Queries
	if q.EventRows != "" || q.ObjectChildren == "" || q.FieldPath(QueryObjectChildren) != "target.events.ordered.children" {
		t.Errorf("queries = %+v", q)
	}
	// The default is today's meaning: an event ledger.
	tg, err = Parse([]byte(minimal), testVars)
	if err != nil || tg.Idempotency != IdempotencyLedger || tg.Ledgerless() {
		t.Errorf("default: %v, %q", err, tg.Idempotency)
	}
}

// Each rule of the new fields fails naming the field.
func TestIdempotencyRules(t *testing.T) {
	for _, c := range []struct {
		name, from, to, want string
	}{
		{"unknown style", "idempotency: object-version", "idempotency: versions",
			`target.idempotency (line 4): "versions" is not one of ledger, object-version, both`},
		{"ledger needs event_rows", "idempotency: object-version", "idempotency: ledger",
			"target.observe.postgres.queries (line 8): required (at least event_rows and effects)"},
		{"both needs event_rows", "idempotency: object-version", "idempotency: both",
			"target.observe.postgres.queries (line 8): required"},
		{"event_rows with object-version", `      url: "{{.DatabaseURL}}"`, `      url: "{{.DatabaseURL}}"
      queries: {event_rows: SELECT count(*) FROM events WHERE id = $3}`,
			"target.observe.postgres.queries.event_rows (line 10): must not be set with target.idempotency: object-version"},
		{"object-version without an ordered role", "    ordered:", "    unhandled: {type: invoice.upcoming}\n    ignored:",
			"target.idempotency (line 4): object-version needs target.events.ordered"},
		{"unknown tie rule", "ties: last-wins", "ties: newest",
			`target.events.ordered.ties (line 15): "newest" is not one of last-wins, first-wins, none`},
		{"no ties with created keys", "ties: last-wins", "ties: none",
			"target.events.ordered.ties (line 15): cannot be none with key: created"},
		{"a tie rule without a tag", `"metadata": {"tag": "{{.Tag}}"}`, `"metadata": {}`,
			"target.events.ordered.object (line 16): must put {{.Tag}} in a field the state query's second column returns"},
		{"children without the object", "subscription = $4", "subscription = $3",
			"target.events.ordered.children (line 18): must reference $4 (the object ID)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := strings.Replace(ledgerless, c.from, c.to, 1)
			if src == ledgerless {
				t.Fatalf("the edit %q changed nothing", c.from)
			}
			_, err := Parse([]byte(src), testVars)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v\nwant it to contain %q", err, c.want)
			}
		})
	}
}
