package scenarios

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator"
	"github.com/hookcert/hookcert/simulator/profiles"
	"github.com/hookcert/hookcert/vocab"
)

// REFETCH: a receiver that fetches the object from the provider's API on
// every webhook (Stripe's advice against out-of-order events) is judged by
// what the API answers, not by the event's body: the API's newest state wins
// over a stale event, a 404 means the object is gone, and a transient API
// failure never costs an event. The harness serves the API
// ({{.ProviderAPIURL}}) from the simulator's model of each object.
var refetchFamily = family{Name: "REFETCH", Guarantees: []*Guarantee{&refetch1, &refetch2, &refetch3}}

// The REFETCH deviation codes.
var (
	codeRefetchNotAcked   = Code{"refetch.not-acked", "an event was not acknowledged though the provider API answered it (or had recovered)"}
	codeRefetchNotCalled  = Code{"refetch.not-called", "the receiver never called the provider API for the event's object"}
	codeRefetchStale      = Code{"refetch.stale-applied", "the object is not at the provider API's newest state after a stale event"}
	codeRefetchRecreated  = Code{"refetch.recreated", "a stale event was applied to an object the provider API answered 404 for"}
	codeRefetchLostOnFail = Code{"refetch.lost", "an event acknowledged while the provider API failed never took effect"}
)

// refetchFacts are what the REFETCH scenarios fix for their checkers.
type refetchFacts struct {
	// Object is the ordered object the scenario refetches; FirstKey the key
	// its first update applies (the positive control).
	Object   string `fact:"refetch_object"`
	FirstKey *int64 `fact:"first_key"`
	// WantKey is the provider API's newest key (REFETCH-1); StaleKey the key
	// of the stale event's body (REFETCH-1, -2).
	WantKey  *int64 `fact:"want_key"`
	StaleKey *int64 `fact:"stale_key"`
	// StepKey and StepFault are, per step of REFETCH-3 ("1", "2", "3"), the
	// key its update carries and the fault the API answered it with first.
	StepKey   map[string]int64  `fact:"step_key:"`
	StepFault map[string]string `fact:"step_fault:"`
}

// Phases and roles of the REFETCH scenarios.
const (
	phaseBefore     = "before"
	phaseAfterStale = "after-stale"
	phaseAfter404   = "after-404"
	// phaseStep (with the step number) is REFETCH-3's read after each update.
	phaseStep = "after:"
	// roleTransient (with the step number) is REFETCH-3's update and its
	// retries.
	roleTransient = "transient:"
)

// retriesREFETCH bounds the provider's retries of an update the receiver did
// not acknowledge (REFETCH-2, -3): more than the API's faults last.
const retriesREFETCH = 4

var refetch1 = Guarantee{
	ID: "REFETCH-1", Title: "Refetched state wins over a stale event",
	Promise: "A receiver that refetches ends at the provider API's newest state, whatever the event's body says.",
	Why:     "Stripe does not guarantee order and advises fetching the object from its API (\"You can also use the API to retrieve any missing objects\"; the snapshot in data.object is as of the event): a receiver that applies the body of an old event delivered after the object moved on regresses it.",
	Needs:   []Capability{"refetch", "ordering"},
	Spec:    "a stale event is answered with the provider's newest state",
	Sends:   "`ordered` update 1 of an object; then, with the provider's object already at key 3 (its event not yet delivered), update 2 under a new event ID",
	Expects: "the update acknowledged, the receiver calling the provider API for the object, and the state query returning key 3, the API's",
	codes:   []Code{codeRefetchNotAcked, codeRefetchNotCalled, codeRefetchStale},
	Reads:   []Read{{Query: queryObject, Tells: "the ordered object ($4): key 1 after the first update, then key 3, the provider API's, after the stale one"}},
	judge: bind(func(s *session, f *refetchFacts) {
		ep, o, obj, base := s.refetchStart(f)
		// The provider's object moves on to key 3; its event is still on
		// its way when update 2, older, arrives under a new event ID.
		newest := s.orderedEvent(ep, o, obj, 3, base)
		s.apiAdvance(ep, newest)
		stale := s.orderedEvent(ep, o, obj, 2, base)
		s.send(ep, stale, roleLate, simulator.Shape{})
		want, staleKey := orderValue(o, newest), orderValue(o, stale)
		f.WantKey, f.StaleKey = &want, &staleKey
		s.note("the provider API holds key %d; the stale update carries key %d", want, staleKey)
		s.objectUntil(ep, obj, phaseAfterStale, want)
	}, func(v *view, f *refetchFacts) {
		v.acked(codeRefetchNotAcked, roleUpdate, roleLate)
		if !v.refetchControl(f) || f.WantKey == nil {
			if f.WantKey == nil {
				v.fail("history: fact want_key: missing")
			}
			return
		}
		late := v.role(roleLate)
		if len(late) == 0 {
			v.fail("history: no stale update was sent")
			return
		}
		v.refetchCalled(f.Object, late[0].StartNS, "the stale update")
		rs := v.reads(queryObject, phaseAfterStale)
		if len(rs) == 0 {
			v.fail("history: no object read after the stale update")
			return
		}
		if o := rs[0]; !o.Found || o.Version != *f.WantKey {
			what := "not the provider API's"
			if f.StaleKey != nil && o.Found && o.Version == *f.StaleKey {
				what = "the stale event's body, not the refetched object"
			}
			v.deviate(codeRefetchStale, "object %s reads %s after a stale update (key %s), want key %d, the provider API's newest: it holds %s", f.Object, objectText(o), factText(f.StaleKey), *f.WantKey, what)
		}
	}),
}

var refetch2 = Guarantee{
	ID: "REFETCH-2", Title: "A 404 on refetch means the object is gone",
	Promise: "When the provider API answers 404 for an event's object, the receiver does not apply the event's body, and acknowledges once it knows the object is deleted.",
	Why:     "Stripe answers a missing object with 404 and error code resource_missing (\"No such customer\"): the object was deleted, and its deletion event may still be on its way. Applying the stale body recreates a deleted object; failing the event forever makes the provider retry it for days (Stripe: up to three days) and disable the endpoint.",
	Needs:   []Capability{"refetch", "ordering", "deletion"},
	Spec:    "a 404 on refetch is handled as a deleted object",
	Sends:   "`ordered` update 1 of an object; the provider deletes it (its API answers 404, the deletion event still on its way); update 2 under a new event ID; the deletion carrying key 3; then update 2 again as the provider's retries while it is not acknowledged",
	Expects: "the object never holds update 2; the deletion acknowledged; update 2 acknowledged by its last attempt",
	codes:   []Code{codeRefetchNotAcked, codeRefetchNotCalled, codeRefetchRecreated},
	Reads:   []Read{{Query: queryObject, Tells: "the ordered object ($4): key 1 after the first update, then never key 2, after the 404 and at the end"}},
	judge: bind(func(s *session, f *refetchFacts) {
		ep, o, obj, base := s.refetchStart(f)
		if o.Delete == nil {
			s.notApplicable("the target declares no events.ordered.delete")
		}
		// The provider deletes the object: its API answers 404 from now on,
		// while the deletion event is still on its way.
		s.env.ProviderAPI.Delete(obj, 3)
		stale := s.orderedEvent(ep, o, obj, 2, base)
		a := s.send(ep, stale, roleLate, simulator.Shape{})
		staleKey := orderValue(o, stale)
		f.StaleKey = &staleKey
		s.settledNow()
		s.object(ep, obj, phaseAfter404)
		del := s.orderedEvent(ep, o, obj, 3, base)
		del.Type, del.Status = o.Delete.Type, "deleted"
		s.send(ep, del, roleDelete, simulator.Shape{})
		s.settledNow()
		// The provider retries update 2 until it is acknowledged.
		for n := 2; !acked(a) && n <= 1+retriesREFETCH; n++ {
			a = s.send(ep, stale, roleLate, simulator.Shape{Attempt: n})
		}
		s.note("update 2's last attempt answered %s", Describe(a))
		s.settledNow()
		s.object(ep, obj, phaseFinal)
	}, func(v *view, f *refetchFacts) {
		v.acked(codeRefetchNotAcked, roleUpdate, roleDelete)
		if !v.refetchControl(f) {
			return
		}
		late := v.role(roleLate)
		if len(late) == 0 {
			v.fail("history: no stale update was sent")
			return
		}
		if last := late[len(late)-1]; !acked(last) {
			v.deviate(codeRefetchNotAcked, "update %s was never acknowledged (%d attempts, the last answered %s), though the object is deleted: the provider retries it until it disables the endpoint", last.Key.EventID, len(late), Describe(last))
		}
		v.refetchCalled(f.Object, late[0].StartNS, "the update the API answered 404 for")
		for _, phase := range []string{phaseAfter404, phaseFinal} {
			rs := v.reads(queryObject, phase)
			if len(rs) == 0 {
				v.fail("history: no object read in phase %q", phase)
				return
			}
			if o := rs[0]; o.Found && f.StaleKey != nil && o.Version == *f.StaleKey {
				v.deviate(codeRefetchRecreated, "object %s reads %s (%s) though the provider API answered 404 for it: the stale event's body was applied to a deleted object", f.Object, objectText(o), phase)
			}
		}
	}),
}

var refetch3 = Guarantee{
	ID: "REFETCH-3", Title: "A transient API failure does not lose the event",
	Promise: "An event whose refetch fails for a while (429, 5xx, a 404 of an object that exists) is either answered non-2xx, so the provider retries it, or refetched again by the receiver; it is never acknowledged and lost.",
	Why:     "Provider APIs rate-limit (429 with Retry-After) and fail (5xx); a receiver that acknowledges an event it could not refetch loses it for good, since the provider never sends it again. The transient 404 is hookcert's model of an object not yet readable (a replica behind), not a documented provider behaviour.",
	Needs:   []Capability{"refetch", "ordering"},
	Spec:    "a transient failure of the provider API does not lose the event",
	Sends:   "`ordered` update 1 of an object, then updates 2, 3 and 4, each while the provider API fails the object's next one or two calls with one fault — a 404, a 429 with Retry-After, a 5xx — in an order the seed draws, then answers slowly; an update not acknowledged is resent as the provider's retry",
	Expects: "each update acknowledged by some attempt, and the object at its key once it is",
	codes:   []Code{codeRefetchNotAcked, codeRefetchNotCalled, codeRefetchLostOnFail},
	Reads:   []Read{{Query: queryObject, Tells: "the ordered object ($4): key 1 after the first update, then each update's key after it is acknowledged"}},
	judge: bind(func(s *session, f *refetchFacts) {
		ep, o, obj, base := s.refetchStart(f)
		faults := s.transientFaults()
		f.StepKey, f.StepFault = map[string]int64{}, map[string]string{}
		for i, fs := range faults {
			step := fmt.Sprint(i + 1)
			ev := s.orderedEvent(ep, o, obj, int64(i+2), base)
			s.env.ProviderAPI.Fail(obj, fs...)
			want := orderValue(o, ev)
			f.StepKey[step], f.StepFault[step] = want, faultName(fs[0])
			a := s.send(ep, ev, roleTransient+step, simulator.Shape{})
			for n := 2; !acked(a) && n <= 1+retriesREFETCH; n++ {
				// The provider's retry, after the Retry-After the API asked
				// of the receiver, compressed as the provider's schedule is.
				_ = sleepCtx(s.ctx, 100*time.Millisecond)
				a = s.send(ep, ev, roleTransient+step, simulator.Shape{Attempt: n})
			}
			s.note("update %d (key %d): the API answered %s to its first %d call(s), then slowly; the last attempt answered %s", i+2, want, faultName(fs[0]), len(fs)-1, Describe(a))
			s.objectUntil(ep, obj, phaseStep+step, want)
		}
	}, func(v *view, f *refetchFacts) {
		v.acked(codeRefetchNotAcked, roleUpdate)
		if !v.refetchControl(f) {
			return
		}
		if len(f.StepKey) == 0 {
			v.fail("history: facts step_key: missing")
			return
		}
		for step := 1; step <= len(f.StepKey); step++ {
			st := fmt.Sprint(step)
			as := v.role(roleTransient + st)
			if len(as) == 0 {
				v.fail("history: step %s sent nothing", st)
				return
			}
			if step == 1 {
				v.refetchCalled(f.Object, as[0].StartNS, "the updates")
			}
			var ack *history.Attempt
			for i := range as {
				if acked(as[i]) {
					ack = &as[i]
					break
				}
			}
			if ack == nil {
				last := as[len(as)-1]
				v.deviate(codeRefetchNotAcked, "update %s (step %s, first answered %s by the API) was not acknowledged in %d attempts though the API had recovered: the last answered %s", last.Key.EventID, st, f.StepFault[st], len(as), Describe(last))
				continue
			}
			rs := v.reads(queryObject, phaseStep+st)
			if len(rs) == 0 {
				v.fail("history: no object read after step %s", st)
				return
			}
			if o := rs[0]; !o.Found || o.Version != f.StepKey[st] {
				v.deviate(codeRefetchLostOnFail, "update %s was acknowledged (attempt %d) after the provider API answered %s, yet object %s reads %s, want key %d: the event is lost", ack.Key.EventID, ack.Attempt, f.StepFault[st], f.Object, objectText(o), f.StepKey[st])
			}
		}
	}),
}

// refetchStart makes a fresh ordered object, applies its update 1 and reads
// it (the positive control: the state query sees an update applied).
func (s *session) refetchStart(f *refetchFacts) (Endpoint, *vocab.Ordered, string, time.Time) {
	if s.env.ProviderAPI == nil {
		s.notApplicable("the run has no provider API: the receiver is not given {{.ProviderAPIURL}}")
	}
	ep := s.primary()
	o := s.orderedRole()
	obj := s.newID(prefixOr(o.IDPrefix))
	s.createOrdered(ep, o, obj)
	base := time.Now().UTC().Truncate(time.Second).Add(-time.Hour)
	first := s.orderedEvent(ep, o, obj, 1, base)
	s.send(ep, first, roleUpdate, simulator.Shape{})
	k := orderValue(o, first)
	f.Object, f.FirstKey = obj, &k
	s.objectUntil(ep, obj, phaseBefore, k)
	return ep, o, obj, base
}

// apiAdvance moves the provider's object to ev's state without delivering ev.
func (s *session) apiAdvance(ep Endpoint, ev profiles.Event) {
	s.apiModel(roleUpdate, s.render(ep, ev))
}

// transientFaults draws REFETCH-3's faults from the seed: one step each for a
// 404, a 429 with Retry-After and a 5xx, in a drawn order, each lasting one
// or two calls and followed by a slow answer.
func (s *session) transientFaults() [][]APIFault {
	s.mu.Lock()
	defer s.mu.Unlock()
	kinds := []APIFault{{Status: http.StatusNotFound}, {Status: http.StatusTooManyRequests, RetryAfter: time.Second},
		{Status: []int{http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable}[s.rng.IntN(3)]}}
	s.rng.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
	out := make([][]APIFault, len(kinds))
	for i, k := range kinds {
		for n := 1 + s.rng.IntN(2); n > 0; n-- {
			out[i] = append(out[i], k)
		}
		out[i] = append(out[i], APIFault{Delay: time.Duration(50+s.rng.IntN(350)) * time.Millisecond})
	}
	return out
}

// faultName is a fault as evidence reads it.
func faultName(f APIFault) string {
	if f.Status == 0 {
		return "slowly"
	}
	return fmt.Sprint(f.Status)
}

// refetchControl checks the positive control: the first update's key was
// read before anything stale was sent. Without it nothing can be judged.
func (v *view) refetchControl(f *refetchFacts) bool {
	if f.Object == "" || f.FirstKey == nil {
		v.fail("history: facts refetch_object and first_key: missing")
		return false
	}
	rs := v.reads(queryObject, phaseBefore)
	if len(rs) == 0 || !rs[0].Found || rs[0].Version != *f.FirstKey {
		got := "no read"
		if len(rs) > 0 {
			got = objectText(rs[0])
		}
		v.fail("object %s after its first update reads %s, want key %d: the update was not applied, so refetching cannot be judged (ORDER-1 judges updates)", f.Object, got, *f.FirstKey)
		return false
	}
	return true
}

// refetchCalled deviates when the receiver made no call to the provider API
// for obj from atNS on.
func (v *view) refetchCalled(obj string, atNS int64, what string) {
	for _, c := range v.apiCalls {
		if c.Object == obj && c.AtNS >= atNS {
			return
		}
	}
	var seen []string
	for _, c := range v.apiCalls {
		seen = append(seen, c.Method+" "+c.Path)
	}
	other := "no call at all"
	if len(seen) > 0 {
		other = fmt.Sprintf("%d call(s) for other objects (%s)", len(seen), strings.Join(seen[:min(3, len(seen))], ", "))
	}
	v.deviate(codeRefetchNotCalled, "the receiver never called the provider API for object %s after %s was sent (%s): capability refetch says it fetches each event's object", obj, what, other)
}
