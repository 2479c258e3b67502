package hookcerttest

import (
	"context"
	"strings"
	"testing"

	"github.com/hookcert/hookcert/vocab"
)

func validTarget() Target {
	return Target{
		BaseURL:     "http://127.0.0.1:1",
		Endpoints:   []Endpoint{{Profile: "stripe", Account: "acct_A", Path: "/webhooks/stripe", Secret: "whsec_test"}},
		DatabaseURL: "postgres://postgres@127.0.0.1:5432/x",
		Queries: Queries{
			EventRows: "SELECT count(*) FROM events WHERE event_id = $3",
			Effects:   "SELECT count(*) FROM ledger WHERE event_id = $3",
		},
	}
}

// TestValidate: the target-file loader's rules hold a Target as they hold a
// file, and every mistake is reported at once, each naming its Go field,
// before anything is opened.
func TestValidate(t *testing.T) {
	if _, _, err := func() *Target { tg := validTarget(); return &tg }().check(); err != nil {
		t.Fatalf("valid target refused: %v", err)
	}
	cases := []struct {
		name string
		edit func(*Target)
		want []string
	}{
		{"no base url", func(tg *Target) { tg.BaseURL = "" }, []string{"Target.BaseURL: required"}},
		{"bad base url", func(tg *Target) { tg.BaseURL = "ftp://x" }, []string{"Target.BaseURL: must be an http"}},
		{"no endpoints", func(tg *Target) { tg.Endpoints = nil }, []string{"Target.Endpoints: at least one"}},
		{"bad endpoint", func(tg *Target) { tg.Endpoints[0] = Endpoint{Profile: "strpe", Path: "x"} },
			[]string{"Endpoints[0].Profile: unknown profile \"strpe\"", "Endpoints[0].Account: required", "Endpoints[0].Path: must start with \"/\"", "Endpoints[0].Secret: required"}},
		{"one scope twice", func(tg *Target) {
			tg.Endpoints = append(tg.Endpoints, Endpoint{Profile: "stripe", Account: "acct_A", Path: "/other", Secret: "s"})
		}, []string{"Endpoints[1]: duplicate endpoint for source \"stripe\" and account \"acct_A\" (also Target.Endpoints[0]"}},
		{"no database", func(tg *Target) { tg.DatabaseURL = "" }, []string{"set exactly one of DatabaseURL and Pool"}},
		{"no event_rows", func(tg *Target) { tg.Queries.EventRows = "" }, []string{"Target.Queries.EventRows: required"}},
		{"event_rows without $3", func(tg *Target) { tg.Queries.EventRows = "SELECT count(*) FROM events WHERE account = $2" },
			[]string{"Target.Queries.EventRows: must reference $3"}},
		{"$5", func(tg *Target) { tg.Queries.Effects = "SELECT count(*) FROM ledger WHERE event_id = $3 AND x = $5" },
			[]string{"Target.Queries.Effects:"}},
		{"quiescent with a parameter", func(tg *Target) { tg.Queries.Quiescent = "SELECT $1::text = ''" },
			[]string{"Target.Queries.Quiescent: must take no parameters"}},
		{"unknown idempotency style", func(tg *Target) { tg.Idempotency = "versions" },
			[]string{`Target.Idempotency: "versions" is not one of ledger, object-version, both`}},
		{"object-version with event rows", func(tg *Target) { tg.Idempotency = "object-version" },
			[]string{"Target.Queries.EventRows: must not be set with Target.Idempotency: object-version", "Target.Idempotency: object-version needs Target.Vocab.Ordered"}},
		{"unknown capability", func(tg *Target) { tg.Capabilities = []string{"crash-proof"} }, []string{"Capabilities[0]: unknown capability"}},
		{"capability twice", func(tg *Target) { tg.Capabilities = []string{"lock-gating", "lock-gating"}; tg.EventTable = "events" },
			[]string{"Capabilities[1]: duplicate capability \"lock-gating\""}},
		{"crash without hooks", func(tg *Target) { tg.Capabilities = []string{"crash"} }, []string{"\"crash\" needs Target.Lifecycle, or Target.Kill and Target.Restart"}},
		{"kill without restart", func(tg *Target) { tg.Kill = func() error { return nil } }, []string{"Kill and Restart go together"}},
		{"lock-gating without table", func(tg *Target) { tg.Capabilities = []string{"lock-gating"} }, []string{"\"lock-gating\" needs Target.EventTable"}},
		{"connection-loss without table", func(tg *Target) { tg.Capabilities = []string{"connection-loss"} }, []string{"\"connection-loss\" needs Target.EffectTable"}},
		{"retention without purge", func(tg *Target) { tg.Capabilities = []string{"retention"} }, []string{"\"retention\" needs Target.Retention"}},
		{"ordering without query", func(tg *Target) { tg.Capabilities = []string{"ordering"} }, []string{"\"ordering\" needs Target.Queries.Object"}},
		{"fixture with both", func(tg *Target) {
			tg.Fixtures = map[string]Fixture{"p": {SQL: "INSERT INTO p VALUES ($4)", Func: func(context.Context, vocab.ObjectData) error { return nil }}}
		}, []string{"Fixtures[p]: set exactly one of SQL and Func"}},
		{"fixture without $4", func(tg *Target) { tg.Fixtures = map[string]Fixture{"p": {SQL: "INSERT INTO p VALUES ($2)"}} },
			[]string{"Fixtures[p].SQL: must reference $4"}},
		{"empty vocabulary", func(tg *Target) { tg.Vocab = &vocab.Vocabulary{} }, []string{"Target.Vocab: declare at least one"}},
		{"lifecycle without state query", func(tg *Target) {
			tg.Vocab = &vocab.Vocabulary{Lifecycle: &vocab.Lifecycle{Initial: "new", Fixture: "missing",
				Transitions: []vocab.Transition{{EventRole: vocab.EventRole{Type: "x.done"}, From: []string{"new"}, To: "done"}}}}
		}, []string{"Target.Queries.Payment: required", "Target.Vocab.Lifecycle.Fixture: no fixture \"missing\""}},
		{"one type in two roles", func(tg *Target) {
			tg.Vocab = &vocab.Vocabulary{Effect: &vocab.EventRole{Type: "charge.succeeded"}, Unhandled: &vocab.EventRole{Type: "charge.succeeded"}}
		}, []string{"Target.Vocab.Unhandled.Type: event type \"charge.succeeded\" is also Target.Vocab.Effect.Type"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tg := validTarget()
			c.edit(&tg)
			_, _, err := tg.check()
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not say %q", err, w)
				}
			}
		})
	}
}

// TestVocabulary: the caller's vocabulary is taken as declared, without being
// changed, and its queries are held to the declared events' column rules.
func TestVocabulary(t *testing.T) {
	tg := validTarget()
	obj, err := vocab.ParseObjectTemplate(`{"id": "{{.ObjectID}}", "status": "{{.State}}"}`)
	if err != nil {
		t.Fatal(err)
	}
	l := &vocab.Lifecycle{Initial: "new", Create: &vocab.EventRole{Type: "x.created", Object: obj},
		Transitions: []vocab.Transition{{EventRole: vocab.EventRole{Type: "x.done"}, From: []string{"new"}, To: "done"}}}
	tg.Vocab = &vocab.Vocabulary{Lifecycle: l}
	tg.Queries.Payment = "SELECT status FROM x WHERE id = $4"
	tg.Queries.ObjectEffects = "SELECT count(*) FROM ledger WHERE object_id = $4"
	model, _, err := tg.check()
	if err != nil {
		t.Fatal(err)
	}
	v := model.Events
	if !v.Declared || !v.Lifecycle.CountsEffects || v.Lifecycle.Missing != vocab.MissingRetry {
		t.Errorf("vocabulary = %+v, lifecycle %+v: want declared, counting effects, missing retry", v, v.Lifecycle)
	}
	if tg.Vocab.Declared || l.CountsEffects || l.Missing != "" {
		t.Error("the caller's vocabulary was changed")
	}
	q := model.Store.Queries
	if !q.Declared("payment") || q.Declared("event_rows") {
		t.Errorf("declared: payment %v, event_rows %v; want true, false", q.Declared("payment"), q.Declared("event_rows"))
	}
	if p := goField(q.FieldPath("event_rows")); p != "Target.Queries.EventRows" {
		t.Errorf("event_rows is named %q", p)
	}
	if p := goField(q.FieldPath("payment")); p != "Target.Queries.Payment" {
		t.Errorf("payment is named %q", p)
	}
}

// TestObjectVersion: a receiver without an event ledger, its tie rule and its
// child rows reach the loader from Go as from a file.
func TestObjectVersion(t *testing.T) {
	tg := validTarget()
	obj, err := vocab.ParseObjectTemplate(`{"id": "{{.ObjectID}}", "metadata": {"tag": "{{.Tag}}"}}`)
	if err != nil {
		t.Fatal(err)
	}
	tg.Idempotency = "object-version"
	tg.Queries.EventRows = ""
	tg.Vocab = &vocab.Vocabulary{Ordered: &vocab.Ordered{EventRole: vocab.EventRole{Type: "customer.subscription.updated", Object: obj},
		Key: vocab.OrderCreated, Ties: vocab.TiesLastWins}}
	tg.Queries.Object = "SELECT extract(epoch FROM synced_at)::bigint, tag FROM subs WHERE id = $4"
	tg.Queries.ObjectChildren = "SELECT min(extract(epoch FROM synced_at))::bigint FROM items WHERE sub = $4"
	model, _, err := tg.check()
	if err != nil {
		t.Fatal(err)
	}
	o := model.Events.Ordered
	if model.Idempotency != "object-version" || o.Ties != vocab.TiesLastWins || !o.Tagged || !o.Children ||
		model.Store.Queries.ObjectChildren != tg.Queries.ObjectChildren || model.Store.Queries.EventRows != "" {
		t.Errorf("model: idempotency %q, ordered %+v, queries %+v", model.Idempotency, o, model.Store.Queries)
	}
}
