package scenarios

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator/profiles"
	"github.com/hookcert/hookcert/vocab"
)

// A receiver without an event ledger gets not_applicable, naming its style,
// for every guarantee that counts event rows and cannot judge it by the
// object its events update, and only for those.
func TestLedgerlessNotApplicable(t *testing.T) {
	ledger := &Env{}
	objects := &Env{Idempotency: idempotencyObjectVersion}
	both := &Env{Idempotency: idempotencyBoth}
	var counted, judged int
	ids := map[string]bool{}
	for _, g := range Catalogue() {
		ids[g.ID] = true
		rows := false
		for _, r := range g.Reads {
			rows = rows || r.Query == queryEventRows
		}
		if objectVersionJudged[g.ID] && !rows {
			t.Errorf("%s: judged by object version, but it reads no event_rows to replace", g.ID)
		}
		why := objects.ledgerReason(&g)
		if want := rows && !objectVersionJudged[g.ID]; want != (why != "") {
			t.Errorf("%s: reads event_rows %v, judged by object version %v, ledgerless reason %q", g.ID, rows, objectVersionJudged[g.ID], why)
		}
		if objectVersionJudged[g.ID] {
			judged++
		}
		if why != "" {
			counted++
			if !strings.Contains(why, "target.idempotency is object-version") || !strings.Contains(why, g.ID) {
				t.Errorf("%s: reason %q names neither the style nor the guarantee", g.ID, why)
			}
			if w := ledgerOnlyWhy[g.ID]; w != "" && !strings.Contains(why, w) {
				t.Errorf("%s: reason %q does not say why (%q)", g.ID, why, w)
			}
		}
		if ledger.ledgerReason(&g) != "" || both.ledgerReason(&g) != "" {
			t.Errorf("%s: not applicable to a receiver with an event ledger", g.ID)
		}
	}
	for id := range ledgerOnlyWhy {
		if !ids[id] || objectVersionJudged[id] {
			t.Errorf("ledgerOnlyWhy[%s]: no such guarantee, or one judged by object version", id)
		}
	}
	if counted == 0 || judged == 0 {
		t.Fatalf("%d guarantee(s) not applicable, %d judged by object version: the test judges nothing", counted, judged)
	}
}

// What an acknowledged ordered event needs to be visible or superseded.
func TestVisible(t *testing.T) {
	row := func(v int64) history.Observation { return history.Observation{Found: true, Version: v} }
	none := history.Observation{}
	for _, c := range []struct {
		name    string
		ev      orderedKey
		o       history.Observation
		deletes []int64
		want    bool
	}{
		{"the update's key", orderedKey{key: 3}, row(3), nil, true},
		{"a newer key", orderedKey{key: 2}, row(3), nil, true},
		{"an older key", orderedKey{key: 3}, row(2), nil, false},
		{"no row, no deletion", orderedKey{key: 3}, none, nil, false},
		{"no row, an older deletion", orderedKey{key: 3}, none, []int64{2}, false},
		{"no row, a newer deletion", orderedKey{key: 2}, none, []int64{3}, true},
		{"a deletion as no row", orderedKey{key: 3, delete: true}, none, nil, true},
		{"a deletion as its tombstone", orderedKey{key: 3, delete: true}, row(3), nil, true},
		{"a deletion undone by an older update", orderedKey{key: 3, delete: true}, row(2), nil, false},
	} {
		if got := visible(c.ev, c.o, c.deletes); got != c.want {
			t.Errorf("%s: visible = %v, want %v", c.name, got, c.want)
		}
	}
	for _, s := range []string{"sub_1 3", "sub_1 3 delete"} {
		if k, ok := parseOrderedKey(s); !ok || k.String() != s {
			t.Errorf("parseOrderedKey(%q) = %v, %v", s, k, ok)
		}
	}
	for _, s := range []string{"", "sub_1", "sub_1 x", "sub_1 3 gone"} {
		if _, ok := parseOrderedKey(s); ok {
			t.Errorf("parseOrderedKey(%q) accepted", s)
		}
	}
}

// objectsOnly is an observer of a receiver without an event ledger: counting
// rows is a mistake; objects read at their recorded keys.
type objectsOnly struct {
	mu      sync.Mutex
	rows    int
	objects map[string]int64
	reads   []string
}

func (o *objectsOnly) EventRows(context.Context, profiles.Key) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.rows++
	return 0, errors.New("no event_rows query")
}
func (o *objectsOnly) Effects(context.Context, profiles.Key, string) (int, error) { return 0, nil }
func (o *objectsOnly) ObjectEffects(context.Context, string, string, string) (int, error) {
	return 0, nil
}
func (o *objectsOnly) Object(_ context.Context, _, _, id string) (int64, string, bool, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.reads = append(o.reads, id)
	v, ok := o.objects[id]
	return v, "", ok, nil
}
func (o *objectsOnly) Payment(context.Context, string, string, string) (string, bool, error) {
	return "", false, nil
}
func (o *objectsOnly) KeyTTL(context.Context, profiles.Key) (time.Duration, bool, bool, error) {
	return 0, false, false, nil
}

// An object-version receiver's reconciliation reads each ordered object once,
// never an event row, and records what the checker needs to judge it offline.
func TestReconcileByObjectVersion(t *testing.T) {
	obs := &objectsOnly{objects: map[string]int64{"sub_1": 3}}
	voc := &vocab.Vocabulary{Declared: true, Ordered: &vocab.Ordered{EventRole: vocab.EventRole{Type: "customer.subscription.updated"}, Key: vocab.OrderField}}
	p, err := profiles.Lookup("stripe")
	if err != nil {
		t.Fatal(err)
	}
	ep := Endpoint{Source: "stripe", Account: "acct_A", Profile: p}
	s := testSession(t, &Env{Idempotency: idempotencyObjectVersion, Observer: obs, Vocab: voc, Endpoints: []Endpoint{ep}})
	for _, v := range []int64{1, 3, 2} {
		ev := s.orderedEvent(ep, voc.Ordered, "sub_1", v, time.Now())
		s.run.addAttempts(history.Attempt{Scenario: 1, Role: "update", Key: profiles.EventKey(ep.Profile, ev), EventType: ev.Type, Outcome: history.OutcomeAcknowledged, Status: 200})
	}
	if r := abortOf(s.reconcile); r != "" {
		t.Fatalf("reconcile aborted: %s", r)
	}
	if obs.rows != 0 || !slices.Equal(obs.reads, []string{"sub_1"}) {
		t.Errorf("event_rows read %d times, objects read %v: want none and sub_1 once", obs.rows, obs.reads)
	}
	if s.facts.Idempotency != idempotencyObjectVersion || len(s.facts.OrderKeys) != 3 {
		t.Errorf("facts: idempotency %q, order keys %v", s.facts.Idempotency, s.facts.OrderKeys)
	}
	var got []history.Observation
	for _, o := range s.run.hist.Observations {
		if o.Phase == phaseReconcile {
			got = append(got, o)
		}
	}
	if len(got) != 1 || got[0].Query != queryObject || got[0].Version != 3 || got[0].Params[3] != "sub_1" {
		t.Errorf("reconciliation reads %+v, want one object read of sub_1 at key 3", got)
	}
}
