package scenarios

import (
	"slices"
	"testing"

	"github.com/hookcert/hookcert/simulator/profiles"
	"github.com/hookcert/hookcert/vocab"
)

// A store check of an object-version receiver sends an ordered update of a
// fresh object, records its object and key, and reads the object, never an
// event row or an effect; a ledger receiver's still sends the effect role.
func TestStoreCheckByObjectVersion(t *testing.T) {
	p, err := profiles.Lookup("stripe")
	if err != nil {
		t.Fatal(err)
	}
	ep := Endpoint{Source: "stripe", Account: "acct_A", Profile: p}
	voc := &vocab.Vocabulary{Declared: true,
		Effect:  &vocab.EventRole{Type: "customer_cash_balance_transaction.created"},
		Ordered: &vocab.Ordered{EventRole: vocab.EventRole{Type: "customer.subscription.updated", IDPrefix: "sub"}, Key: vocab.OrderField}}

	ledger := testSession(t, &Env{Vocab: voc, Endpoints: []Endpoint{ep}})
	if ev := ledger.storeEvent(ep); ev.Type != voc.Effect.Type || len(ledger.facts.OrderKeys) != 0 {
		t.Errorf("ledger: sent %s, order keys %v; want the effect role and none", ev.Type, ledger.facts.OrderKeys)
	}

	obs := &objectsOnly{objects: map[string]int64{}}
	s := testSession(t, &Env{Idempotency: idempotencyObjectVersion, Observer: obs, Vocab: voc, Endpoints: []Endpoint{ep}})
	a, b := s.storeEvent(ep), s.storeEvent(ep)
	if a.Type != voc.Ordered.Type || a.ObjectID == b.ObjectID {
		t.Fatalf("sent %s for %s and %s: want ordered updates of two fresh objects", a.Type, a.ObjectID, b.ObjectID)
	}
	ka, kb := s.key(ep, a), s.key(ep, b)
	if got := s.orderedOf(ka); got.obj != a.ObjectID || got.key != a.Version || got.delete {
		t.Errorf("recorded %v for %s, want %s %d", got, KeyString(ka), a.ObjectID, a.Version)
	}
	obs.objects[a.ObjectID] = a.Version // a applied, b not
	if r := abortOf(func() { s.states(phaseBad, 0, ka, kb) }); r != "" {
		t.Fatalf("states aborted: %s", r)
	}
	if obs.rows != 0 {
		t.Errorf("event_rows read %d times", obs.rows)
	}
	slices.Sort(obs.reads)
	want := []string{a.ObjectID, b.ObjectID}
	slices.Sort(want)
	if !slices.Equal(obs.reads, want) {
		t.Errorf("objects read %v, want %v once each (hint 0 reads once)", obs.reads, want)
	}
	found := map[string]bool{}
	for _, o := range s.run.hist.Observations {
		if o.Query != queryObject || o.Phase != phaseBad {
			t.Errorf("read %s in phase %q, want object reads in %q", o.Query, o.Phase, phaseBad)
		}
		found[o.Params[3]] = o.Found
	}
	if !found[a.ObjectID] || found[b.ObjectID] {
		t.Errorf("recorded reads %v", found)
	}
	if s.facts.Idempotency != idempotencyObjectVersion {
		t.Errorf("facts: idempotency %q", s.facts.Idempotency)
	}
	// A key with no recorded update cannot be read by its object.
	if r := abortOf(func() { s.states(phaseBad, 0, profiles.Key{Source: "stripe", Account: "acct_A", EventID: "evt_x"}) }); r == "" {
		t.Error("a key without a recorded update was read")
	}
}
