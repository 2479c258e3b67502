package simulator

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// planOf is the plan a caller built before Deliver existed (the conformance
// suite's deliverPlan): one event and one step per delivery.
func planOf(seed int64, ds []Delivery) *Plan {
	plan := &Plan{Name: "equivalent", Seed: seed}
	for i, d := range ds {
		ev := d.Event
		en := fmt.Sprintf("e%d", i)
		plan.Events = append(plan.Events, EventSpec{Name: en, ID: ev.ID, Source: ev.Source, Account: ev.Account,
			Type: ev.Type, ObjectID: ev.ObjectID, Version: ev.Version, Amount: ev.Amount, Currency: ev.Currency,
			Status: ev.Status, Object: ev.Object, Created: ev.Created})
		plan.Steps = append(plan.Steps, Step{Event: en, Copies: d.Copies, WithPrevious: d.Together, Shape: d.Shape})
	}
	return plan
}

// untimed is a record without what differs between two sends of the same
// attempt: when it happened and the signed time.
func untimed(a history.Attempt) history.Attempt {
	a.WallStart, a.StartNS, a.EndNS, a.VirtualNS, a.SignedAt = time.Time{}, 0, 0, 0, time.Time{}
	a.ConnectTries = 0
	return a
}

// Deliver makes the attempts the equivalent plan makes through RunNotify:
// same delivery IDs, steps, copies, attempt numbers, faults, keys and
// outcomes, for profiles with their own delivery ID (shopify) and object ID
// (adyen) shapes, and events that leave IDs to the seed.
func TestDeliverMakesTheEquivalentPlansAttempts(t *testing.T) {
	created := time.Now().UTC().Truncate(time.Second)
	for _, id := range []string{"testprof", "stripe", "shopify", "adyen"} {
		t.Run(id, func(t *testing.T) {
			var p profiles.Profile = testProfile{}
			secret := testSecret
			var url string
			if id == "testprof" {
				// Verifies signatures: tampered and wrongly signed copies fail.
				url = newReceiver(t, nil).srv.URL
			} else {
				var err error
				if p, err = profiles.Lookup(id); err != nil {
					t.Fatal(err)
				}
				if secret, err = profiles.GenerateSecret(id, rand.Reader); err != nil {
					t.Fatal(err)
				}
				// Acknowledges everything: the records must agree, not verify.
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
				t.Cleanup(srv.Close)
				url = srv.URL
			}
			ev := func(n int, withIDs bool) profiles.Event {
				e := profiles.Event{Source: id, Account: "acct_A", Type: "payment_intent.succeeded", Amount: int64(100 * n),
					Currency: "usd", Status: "succeeded", Created: created}
				if withIDs {
					e.ObjectID = fmt.Sprintf("%016d", 1000000000000000+n)
					if p.Facts().EventIDRule == "" {
						e.ID = fmt.Sprintf("evt_%d", n)
					}
				}
				return e
			}
			ds := []Delivery{
				{Event: ev(1, true)},
				{Event: ev(2, true), Together: true, Shape: Shape{Faults: Faults{Tamper: true}}},
				{Event: ev(3, true), Copies: 3, Shape: Shape{Attempt: 2, PadTo: 4000}},
				{Event: ev(1, true), Together: true, Shape: Shape{Attempt: 2, Faults: Faults{LostAck: LostAckDiscard}}},
				// IDs left to the seed; created left to the call's start.
				{Event: profiles.Event{Type: "customer.created"}, Shape: Shape{Faults: Faults{StaleBy: Duration(time.Minute)}, Timeout: Duration(3 * time.Second)}},
				{Event: ev(2, true), Together: true, Copies: 2, Shape: Shape{Faults: Faults{WrongSecret: true}}},
			}
			const seed = 77
			newRunner := func() *Runner {
				r, err := NewRunner(Target{URL: url, Profile: p, Secrets: []string{secret}, Account: "acct_A"}, Options{})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(r.Close)
				return r
			}
			h, err := newRunner().RunNotify(context.Background(), planOf(seed, ds), nil)
			if err != nil {
				t.Fatal(err)
			}
			var notified atomic.Int32
			got, rels, err := newRunner().Deliver(context.Background(), seed, ds, func(history.Attempt) { notified.Add(1) })
			if err != nil {
				t.Fatal(err)
			}
			want := append([]history.Attempt(nil), h.Attempts...)
			sort.SliceStable(want, func(i, j int) bool {
				if want[i].Step != want[j].Step {
					return want[i].Step < want[j].Step
				}
				return want[i].Copy < want[j].Copy
			})
			if len(got) != 9 || len(want) != 9 || int(notified.Load()) != len(got) {
				t.Fatalf("Deliver made %d attempts (%d notified), the plan %d; want 9", len(got), notified.Load(), len(want))
			}
			for i := range got {
				if g, w := untimed(got[i]), untimed(want[i]); !reflect.DeepEqual(g, w) {
					t.Errorf("attempt %d:\nDeliver %+v\nplan    %+v", i, g, w)
				}
			}
			if len(rels) != 2 || len(h.Releases) != 2 {
				t.Fatalf("releases: Deliver %d, plan %d; want 2", len(rels), len(h.Releases))
			}
			sort.Slice(h.Releases, func(i, j int) bool { return h.Releases[i].Step < h.Releases[j].Step })
			for i, rel := range rels {
				w := h.Releases[i]
				if rel.Step != w.Step || rel.Attempt != w.Attempt || rel.Key != w.Key || rel.Copies != w.Copies {
					t.Errorf("release %d: Deliver %+v, plan %+v", i, rel, w)
				}
			}
			// The profiles' own ID shapes reach the records.
			for _, a := range got {
				uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(a.DeliveryID)
				if (id == "shopify") != uuid || (id != "shopify") != strings.HasPrefix(a.DeliveryID, "dlv_") {
					t.Errorf("%s delivery ID %q", id, a.DeliveryID)
				}
			}
			if k := got[6].Key.EventID; id == "adyen" && !regexp.MustCompile(`^[1-9][0-9]{15}:customer\.created:true$`).MatchString(k) {
				t.Errorf("adyen key of a seeded object ID: %q", k)
			}
			// The faults' roles: the tampered and wrongly signed deliveries are
			// the ones the verifying receiver turns away.
			if id == "testprof" {
				for _, a := range got {
					bad := a.Step == 1 || a.Step == 5
					if bad != (a.Outcome == history.OutcomeFailed) || (a.Step == 3) != (a.Outcome == history.OutcomeUnknown) {
						t.Errorf("step %d copy %d faults %v: outcome %s", a.Step, a.Copy, a.Faults, a.Outcome)
					}
				}
			}
		})
	}
}

// With Options.Origin the records are on the caller's clock: times count from
// the origin, not from the runner's creation.
func TestDeliverRecordsOnTheCallersClock(t *testing.T) {
	rc := newReceiver(t, nil)
	origin := time.Now().Add(-time.Hour)
	r, err := NewRunner(Target{URL: rc.srv.URL, Profile: testProfile{}, Secrets: []string{testSecret}, Account: "acct_A"}, Options{Origin: origin})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !r.Started().Equal(origin) {
		t.Fatalf("Started %v, want the origin %v", r.Started(), origin)
	}
	before := int64(time.Since(origin))
	atts, rels, err := r.Deliver(context.Background(), 1, []Delivery{{Event: testEvent()}, {Event: testEvent(), Copies: 2}}, nil)
	after := int64(time.Since(origin))
	if err != nil {
		t.Fatal(err)
	}
	if len(atts) != 3 || len(rels) != 1 {
		t.Fatalf("%d attempts, %d releases", len(atts), len(rels))
	}
	for _, a := range atts {
		if a.StartNS < before || a.EndNS < a.StartNS || a.EndNS > after || a.VirtualNS != a.StartNS {
			t.Errorf("attempt %d/%d: start %d end %d virtual %d, want within [%d, %d] of the origin", a.Step, a.Copy, a.StartNS, a.EndNS, a.VirtualNS, before, after)
		}
		if d := a.WallStart.Sub(origin.Add(time.Duration(a.StartNS))); d < -50*time.Millisecond || d > 50*time.Millisecond {
			t.Errorf("attempt %d/%d: wall start %v is %v off the origin's clock", a.Step, a.Copy, a.WallStart, d)
		}
	}
	if rels[0].StartNS < before || rels[0].StartNS > after {
		t.Errorf("release start %d, want within [%d, %d] of the origin", rels[0].StartNS, before, after)
	}
	// Without an origin the clock starts with the runner, as before.
	r2 := newTestRunner(t, rc.srv.URL, testProfile{})
	a2, _, err := r2.Deliver(context.Background(), 1, []Delivery{{Event: testEvent()}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a2[0].StartNS >= before {
		t.Errorf("default origin: start %d, want counted from the runner's creation", a2[0].StartNS)
	}
}

// Together deliveries go at the same time, each group after the previous
// group's first attempts ended; the attempts come back in delivery order
// whatever order they ended in.
func TestDeliverOrderAndTogetherGroups(t *testing.T) {
	rc := newReceiver(t, func(w http.ResponseWriter, _ int, s seen) {
		// Earlier deliveries answer later, so completion order is reversed.
		var n int
		fmt.Sscanf(s.header.Get("X-Test-Event-Id"), "evt_%d", &n)
		time.Sleep(time.Duration(5-n) * 40 * time.Millisecond)
	})
	r := newTestRunner(t, rc.srv.URL, testProfile{})
	ev := func(n int) profiles.Event {
		e := testEvent()
		e.ID = fmt.Sprintf("evt_%d", n)
		return e
	}
	ds := []Delivery{
		{Event: ev(0), Copies: 2},
		{Event: ev(1), Together: true},
		{Event: ev(2), Together: true},
		{Event: ev(3)},
		{Event: ev(4), Together: true},
	}
	var mu sync.Mutex
	var heard []string
	atts, rels, err := r.Deliver(context.Background(), 5, ds, func(a history.Attempt) {
		mu.Lock()
		heard = append(heard, fmt.Sprintf("%d/%d", a.Step, a.Copy))
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, a := range atts {
		order = append(order, fmt.Sprintf("%d/%d", a.Step, a.Copy))
		if want := fmt.Sprintf("evt_%d", a.Step); a.Key.EventID != want {
			t.Errorf("step %d delivers %s, want %s", a.Step, a.Key.EventID, want)
		}
	}
	if got, want := strings.Join(order, " "), "0/0 0/1 1/0 2/0 3/0 4/0"; got != want {
		t.Fatalf("order %q, want %q", got, want)
	}
	if len(heard) != len(atts) {
		t.Fatalf("each heard %d attempts, want %d", len(heard), len(atts))
	}
	if len(rels) != 1 || rels[0].Step != 0 || rels[0].Copies != 2 {
		t.Fatalf("releases %+v", rels)
	}
	// The first group overlaps; the second starts once the first ended.
	var firstEnd int64
	for _, a := range atts[:4] {
		firstEnd = max(firstEnd, a.EndNS)
		for _, b := range atts[:4] {
			if a.StartNS >= b.EndNS {
				t.Errorf("step %d started after step %d ended: not together", a.Step, b.Step)
			}
		}
	}
	for _, a := range atts[4:] {
		if a.StartNS < firstEnd {
			t.Errorf("step %d started at %d, before the first group ended at %d", a.Step, a.StartNS, firstEnd)
		}
	}
	if atts[4].StartNS >= atts[5].EndNS || atts[5].StartNS >= atts[4].EndNS {
		t.Errorf("steps 3 and 4 did not overlap")
	}
}

// Bad input is an error before anything is sent, naming the delivery and the
// rule.
func TestDeliverBadInputSendsNothing(t *testing.T) {
	rc := newReceiver(t, nil)
	r := newTestRunner(t, rc.srv.URL, testProfile{})
	ok := Delivery{Event: testEvent()}
	cases := []struct {
		bad  Delivery
		want string
	}{
		{Delivery{Event: testEvent(), Shape: Shape{Faults: Faults{LostAck: "sometimes"}}}, "deliveries[1].faults.lost_ack"},
		{Delivery{Event: testEvent(), Shape: Shape{Faults: Faults{StaleBy: Duration(time.Minute), AheadBy: Duration(time.Minute)}}}, "deliveries[1].faults: stale_by and ahead_by"},
		{Delivery{Event: testEvent(), Shape: Shape{PadTo: 5000, Faults: Faults{OversizeBytes: 6000}}}, "deliveries[1].pad_to and faults.oversize_bytes"},
		{Delivery{Event: testEvent(), Shape: Shape{Attempt: -1}}, "deliveries[1].attempt"},
		{Delivery{Event: testEvent(), Shape: Shape{Timeout: -1}}, "deliveries[1].timeout"},
		{Delivery{Event: testEvent(), Copies: MaxCopies + 1}, "deliveries[1].copies"},
		{Delivery{Event: profiles.Event{ID: "evt_1"}}, "deliveries[1].event.type is required"},
		{Delivery{Event: profiles.Event{Type: "t", Object: []byte(`[1]`)}}, "deliveries[1].event.object"},
	}
	for _, c := range cases {
		atts, _, err := r.Deliver(context.Background(), 1, []Delivery{ok, c.bad}, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one naming %q", c.bad, err, c.want)
		}
		if len(atts) != 0 {
			t.Errorf("%+v: %d attempts made", c.bad, len(atts))
		}
	}
	first := ok
	first.Together = true
	if _, _, err := r.Deliver(context.Background(), 1, []Delivery{first}, nil); err == nil || !strings.Contains(err.Error(), "together needs a delivery before it") {
		t.Errorf("together on the first delivery: %v", err)
	}
	if n := rc.count(); n != 0 {
		t.Fatalf("the receiver saw %d requests, want none", n)
	}
	// Nothing to deliver is no error.
	if atts, rels, err := r.Deliver(context.Background(), 1, nil, nil); err != nil || len(atts) != 0 || len(rels) != 0 {
		t.Fatalf("no deliveries: %d attempts, %d releases, %v", len(atts), len(rels), err)
	}
}

// Step and SendOptions carry their sending options as the one Shape they
// embed; Step writes them where plans always had them (stepWire), so stepWire
// must hold exactly Step's own fields and Shape's, under the same tags.
func TestStepAndSendOptionsEmbedShape(t *testing.T) {
	shape := reflect.TypeFor[Shape]()
	for _, typ := range []reflect.Type{reflect.TypeFor[Step](), reflect.TypeFor[SendOptions]()} {
		if f, ok := typ.FieldByName("Shape"); !ok || !f.Anonymous || f.Type != shape {
			t.Errorf("%s does not embed Shape", typ)
		}
		for i := range shape.NumField() {
			if f, _ := typ.FieldByName(shape.Field(i).Name); len(f.Index) != 2 {
				t.Errorf("%s.%s is not Shape's (index %v)", typ, shape.Field(i).Name, f.Index)
			}
		}
	}
	want := map[string]reflect.StructField{}
	for _, f := range reflect.VisibleFields(reflect.TypeFor[Step]()) {
		if !f.Anonymous {
			want[f.Name] = f
		}
	}
	wire := reflect.TypeFor[stepWire]()
	for i := range wire.NumField() {
		f := wire.Field(i)
		if w, ok := want[f.Name]; !ok || w.Type != f.Type || w.Tag != f.Tag {
			t.Errorf("stepWire.%s (%s %q) is not Step's", f.Name, f.Type, f.Tag)
		}
		delete(want, f.Name)
	}
	for name := range want {
		t.Errorf("Step.%s is missing from stepWire: plans would not write it", name)
	}
	// Every field reaches the wire form.
	s := Step{Name: "n", Event: "e", Wait: 1, Copies: 2, Retry: true, Replay: &Replay{Of: "x"}, WithPrevious: true,
		Shape: Shape{Attempt: 3, Faults: Faults{Tamper: true}, Timeout: 4, PadTo: 5}}
	w := s.wire()
	if !reflect.DeepEqual(w, stepWire{Name: "n", Event: "e", Wait: 1, Copies: 2, Faults: Faults{Tamper: true}, Retry: true,
		Timeout: 4, Replay: s.Replay, Attempt: 3, WithPrevious: true, PadTo: 5}) {
		t.Errorf("wire form %+v of %+v", w, s)
	}
}
