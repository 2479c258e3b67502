package reference

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/hookcert/hookcert/adapters/sink"
	"github.com/hookcert/hookcert/reference/store"
)

// domainCase is one receiver under TestDomainRules: which of the defects that
// change the business change (store.Apply) are active, and whether it has an
// outbox.
type domainCase struct {
	lww, ndc, aut, sbc, outbox bool
}

func (c domainCase) defects() []string {
	var d []string
	for _, x := range []struct {
		on   bool
		name string
	}{{c.lww, DefectLastWriteWins}, {c.ndc, DefectNoDomainConstraint}, {c.aut, DefectApplyUnknownTypes}, {c.sbc, DefectSendBeforeCommit}} {
		if x.on {
			d = append(d, x.name)
		}
	}
	return d
}

// TestDomainRules pins the business change of the clean reference and of every
// defect that changes it (last-write-wins, no-domain-constraint,
// apply-unknown-types, send-before-commit), alone and together: the answer to
// each event of one script, then the ledger, payments, subscriptions, balances,
// outbox messages and downstream calls it leaves.
func TestDomainRules(t *testing.T) {
	const (
		processed = "200 processed "
		refused   = "200 ignored refused_transition"
		stale     = "200 ignored stale_version"
		exists    = "200 ignored already_exists"
		unhandled = "200 ignored unhandled_type"
		waitFor   = "503 retry failed_precondition"
		transient = "500 retry transient_error"
	)
	either := func(cond bool, yes, no string) string {
		if cond {
			return yes
		}
		return no
	}
	type step struct {
		name    string
		profile string
		typ     string
		o       obj
		before  func(s *sink.Sink) // runs before the delivery
		want    func(c domainCase) string
	}
	always := func(s string) func(domainCase) string { return func(domainCase) string { return s } }
	script := []step{
		{"payment succeeded", "stripe", store.TypePaymentSucceeded, obj{ID: "pi_1", Amount: 10}, nil, always(processed)},
		{"payment succeeded again", "stripe", store.TypePaymentSucceeded, obj{ID: "pi_1", Amount: 10}, nil,
			func(c domainCase) string { return either(c.lww || c.ndc, processed, refused) }},
		{"refund", "stripe", store.TypeChargeRefunded, obj{ID: "pi_1", Amount: 10}, nil, always(processed)},
		{"refund again", "stripe", store.TypeChargeRefunded, obj{ID: "pi_1", Amount: 10}, nil,
			func(c domainCase) string { return either(c.lww, processed, refused) }},
		{"succeeded after refund", "stripe", store.TypePaymentSucceeded, obj{ID: "pi_1", Amount: 10}, nil,
			func(c domainCase) string { return either(c.lww || c.ndc, processed, refused) }},
		{"payment created", "stripe", store.TypePaymentCreated, obj{ID: "pi_2", Amount: 3}, nil, always(processed)},
		{"payment created again", "stripe", store.TypePaymentCreated, obj{ID: "pi_2", Amount: 3}, nil, always(exists)},
		{"refund of a pending payment", "stripe", store.TypeChargeRefunded, obj{ID: "pi_2", Amount: 3}, nil,
			func(c domainCase) string { return either(c.lww, processed, waitFor) }},
		{"refund of an absent payment", "stripe", store.TypeChargeRefunded, obj{ID: "pi_3", Amount: 1}, nil, always(waitFor)},
		{"credit", "stripe", store.TypeCashBalance, obj{ID: "cb_1", Amount: 5, Currency: "eur"}, nil, always(processed)},
		{"credit, downstream failing", "stripe", store.TypeCashBalance, obj{ID: "cb_2", Amount: 6, Currency: "eur"},
			func(s *sink.Sink) { s.FailNext(1, http.StatusInternalServerError) },
			func(c domainCase) string { return either(c.sbc, transient, processed) }},
		{"subscription v2", "svix", store.TypeSubscriptionUpdated, obj{ID: "sub_1", Version: 2, Status: "active"}, nil, always(processed)},
		{"late subscription v1", "svix", store.TypeSubscriptionUpdated, obj{ID: "sub_1", Version: 1, Status: "trialing"}, nil,
			func(c domainCase) string { return either(c.lww, processed, stale) }},
		{"subscription deleted v3", "svix", store.TypeSubscriptionDeleted, obj{ID: "sub_1", Version: 3}, nil, always(processed)},
		{"late subscription v2 after deletion", "svix", store.TypeSubscriptionUpdated, obj{ID: "sub_1", Version: 2, Status: "active"}, nil,
			func(c domainCase) string { return either(c.lww, processed, stale) }},
		{"subscription at the deletion's version", "svix", store.TypeSubscriptionUpdated, obj{ID: "sub_1", Version: 3, Status: "active"}, nil,
			func(c domainCase) string { return either(c.lww, processed, stale) }},
		{"unknown type", "github", "hookcert.conformance.unhandled", obj{ID: "x", Amount: 4}, nil,
			func(c domainCase) string { return either(c.aut, processed, unhandled) }},
	}
	for _, c := range []domainCase{
		{},
		{lww: true},
		{ndc: true},
		{aut: true},
		{lww: true, ndc: true, aut: true},
		{outbox: true},
		{outbox: true, sbc: true},
		{outbox: true, lww: true, ndc: true, aut: true, sbc: true},
	} {
		name := fmt.Sprint(c.defects())
		if c.outbox {
			name += "+outbox"
		}
		t.Run(name, func(t *testing.T) {
			opts := Options{Defects: c.defects()}
			var s *sink.Sink
			if c.outbox {
				s = newSink(t) // no dispatcher runs: messages stay pending
				opts.Outbox = OutboxOptions{SinkURL: s.URL()}
			}
			e := newEnv(t, opts)
			keys := map[string]store.Key{}
			for i, st := range script {
				if st.before != nil && s != nil {
					st.before(s)
				}
				ep := e.ep(st.profile, "acct_A")
				id := newID(fmt.Sprintf("s%02d", i))
				keys[st.o.ID+"/"+st.name] = store.Key{Source: ep.KeySource(), AccountID: ep.Account, EventID: id}
				r := e.send(build(ep, id, st.typ, st.o, time.Now()))
				if got, want := fmt.Sprintf("%d %s %s", r.Code, r.Status, r.Reason), st.want(c); got != want {
					t.Fatalf("step %d (%s): answered %q, want %q", i, st.name, got, want)
				}
			}

			// The ledger, in the order it was written.
			var ledger []string
			add := func(cond bool, entry string) {
				if cond {
					ledger = append(ledger, entry)
				}
			}
			add(true, "payment pi_1 10")
			add(c.ndc, "payment pi_1 10") // a second succeeded event credits again
			add(true, "refund pi_1 -10")
			add(c.lww && c.ndc, "refund pi_1 -10") // refund again: no state check, no index
			add(c.ndc, "payment pi_1 10")          // succeeded after refund
			add(c.lww, "refund pi_2 -3")           // refund of a pending payment
			add(true, "cash cb_1 5")
			add(!c.sbc, "cash cb_2 6") // send-before-commit: the failed call rolled it back
			add(c.aut, "cash x 4")
			if got := e.rows(`SELECT kind || ' ' || object_id || ' ' || amount FROM ledger_entries ORDER BY id`); !slices.Equal(got, ledger) {
				t.Errorf("ledger %q, want %q", got, ledger)
			}
			stripeBalance := 0
			for _, l := range ledger {
				var kind, object string
				var amount int
				if _, err := fmt.Sscan(l, &kind, &object, &amount); err != nil {
					t.Fatal(err)
				}
				if object != "x" {
					stripeBalance += amount
				}
			}
			balances := []string{fmt.Sprintf("stripe %d", stripeBalance)}
			if c.aut {
				balances = []string{"github 4", fmt.Sprintf("stripe %d", stripeBalance)}
			}
			if got := e.rows(`SELECT source || ' ' || balance FROM account_balances ORDER BY source`); !slices.Equal(got, balances) {
				t.Errorf("balances %q, want %q", got, balances)
			}

			payments := []string{"pi_1 " + either(c.lww || c.ndc, "succeeded", "refunded"), "pi_2 " + either(c.lww, "refunded", "pending")}
			if got := e.rows(`SELECT payment_id || ' ' || status FROM payments ORDER BY payment_id`); !slices.Equal(got, payments) {
				t.Errorf("payments %q, want %q", got, payments)
			}
			subs := []string{either(c.lww, "sub_1 3 active", "sub_1 3 deleted")}
			if got := e.rows(`SELECT object_id || ' ' || version || ' ' || status FROM subscriptions`); !slices.Equal(got, subs) {
				t.Errorf("subscriptions %q, want %q", got, subs)
			}

			// The outbox: a message per applied refund and credit, in the business
			// transaction; none for a credit sent inline.
			var outbox []string
			if c.outbox {
				outbox = append(outbox, "refund pi_1")
				if c.lww {
					outbox = append(outbox, "refund pi_1", "refund pi_2")
				}
				if !c.sbc {
					outbox = append(outbox, "credit cb_1", "credit cb_2")
					if c.aut {
						outbox = append(outbox, "credit x")
					}
				}
			}
			if got := e.rows(`SELECT kind || ' ' || coalesce(body->>'payment_id', body->>'object_id') FROM outbox_messages ORDER BY id`); !slices.Equal(got, outbox) {
				t.Errorf("outbox %q, want %q", got, outbox)
			}

			// Downstream calls: only send-before-commit makes them, inline.
			if s != nil {
				applied := map[string]int{}
				if c.sbc {
					applied["cb_1/credit"] = 1
					if c.aut {
						applied["x/unknown type"] = 1
					}
				}
				calls := 0
				for _, k := range []string{"cb_1/credit", "cb_2/credit, downstream failing", "x/unknown type"} {
					if got := s.Applied(store.OutboxKey(keys[k], store.OutboxCredit)); got != applied[k] {
						t.Errorf("%s applied downstream %d times, want %d", k, got, applied[k])
					}
				}
				if c.sbc {
					calls = 2 // cb_1, and the failed call of cb_2
					if c.aut {
						calls++
					}
				}
				if got := len(s.Calls()); got != calls {
					t.Errorf("%d downstream calls, want %d", got, calls)
				}
			}
		})
	}
}

// rows returns the single text column of sql's rows.
func (e *env) rows(sql string, args ...any) []string {
	e.t.Helper()
	rs, err := e.pool.Query(context.Background(), sql, args...)
	if err != nil {
		e.t.Fatalf("%s: %v", sql, err)
	}
	var out []string
	for rs.Next() {
		var s string
		if err := rs.Scan(&s); err != nil {
			e.t.Fatalf("%s: %v", sql, err)
		}
		out = append(out, s)
	}
	if err := rs.Err(); err != nil {
		e.t.Fatalf("%s: %v", sql, err)
	}
	return out
}
