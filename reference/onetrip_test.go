package reference

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hookcert/hookcert/reference/store"
)

// idleRecorder records hits like recorder but reports nothing armed, so the
// clean receiver takes its one-round-trip credit.
type idleRecorder struct{ *recorder }

func (idleRecorder) idle() bool { return true }

// A clean cash credit commits in one statement when no failpoint is armed and
// step by step when one may fire; both write the same rows, answer a
// redelivery duplicate without touching anything, and reach the points after
// the commit.
func TestCreditOneTripWritesWhatTheStepsWrite(t *testing.T) {
	e := newEnv(t, Options{})
	ep := e.ep("stripe", "acct_A")
	for _, c := range []struct {
		name     string
		rec      *recorder
		idle     bool
		wantHits string
	}{
		{"one trip", &recorder{}, true, "after-commit-before-response,after-response"},
		{"step by step", &recorder{}, false, "after-insert-before-commit,after-commit-before-response,after-response"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.idle {
				e.fps.set(idleRecorder{c.rec})
			} else {
				e.fps.set(c.rec)
			}
			balance := func() int {
				return e.count(`SELECT coalesce(sum(balance), 0) FROM account_balances WHERE source=$1 AND account_id=$2`, ep.KeySource(), ep.Account)
			}
			before := balance()
			id := newID("evt_trip")
			d := build(ep, id, store.TypeCashBalance, obj{ID: "ccsbtxn_" + id, Amount: 250, Currency: "usd"}, time.Now())
			e.expect(e.send(d), 200, StatusProcessed, "")
			var hits []string
			for _, h := range c.rec.waitHits(t, strings.Count(c.wantHits, ",")+1) {
				hits = append(hits, strings.TrimSuffix(h, ":"+id))
			}
			if got := strings.Join(hits, ","); got != c.wantHits {
				t.Fatalf("points reached %s, want %s", got, c.wantHits)
			}
			e.expect(e.send(d), 200, StatusDuplicate, "")

			var typ string
			var payload []byte
			if err := e.pool.QueryRow(context.Background(), `SELECT event_type, payload FROM processed_webhook_events
				WHERE source=$1 AND account_id=$2 AND event_id=$3`, ep.KeySource(), ep.Account, id).Scan(&typ, &payload); err != nil {
				t.Fatalf("key row: %v", err)
			}
			if typ != store.TypeCashBalance || !bytes.Equal(payload, d.body) {
				t.Fatalf("key row holds type %q and a payload of %d bytes, want %q and the %d bytes sent", typ, len(payload), store.TypeCashBalance, len(d.body))
			}
			if n := e.count(`SELECT count(*) FROM ledger_entries WHERE source=$1 AND account_id=$2 AND event_id=$3
				AND object_id=$4 AND kind='cash' AND amount=250`, ep.KeySource(), ep.Account, id, "ccsbtxn_"+id); n != 1 {
				t.Fatalf("%d cash entries of 250 for the credit, want 1", n)
			}
			if got := balance() - before; got != 250 {
				t.Fatalf("balance moved by %d, want 250 (once, the duplicate touching nothing)", got)
			}
		})
	}
}
