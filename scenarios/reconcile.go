package scenarios

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator/profiles"
	"github.com/hookcert/hookcert/vocab"
)

// Reconciliation holds every scenario's delivery history against the rows, as
// Jepsen's queue checker does: per event key, acknowledged, failed and unknown
// attempts against what is stored. The session reads (phase "reconcile") every
// key it delivered that the receiver should have stored; the checker then
// calls an acknowledged key with no row lost, a key with two rows duplicated,
// and a credit-like event applied twice a double.

// Reconciliation's deviation codes: every scenario can report them.
var (
	codeReconcileLost  = Code{"reconcile.lost", "an acknowledged event has no event row, or (object-version) its update is neither visible nor superseded"}
	codeReconcileDup   = Code{"reconcile.duplicated", "an event key has more than one event row"}
	codeReconcileTwice = Code{"reconcile.applied-twice", "a credit-like event was applied more than once"}
)

var reconcileCodes = []Code{codeReconcileLost, codeReconcileDup, codeReconcileTwice}

// phaseReconcile is the read of every delivered key after a scenario ends.
const phaseReconcile = "reconcile"

// Idempotency styles (target.idempotency), as the history records them.
const (
	idempotencyObjectVersion = "object-version"
	idempotencyBoth          = "both"
)

// ledgerless reports whether the receiver keeps no event ledger: nothing
// counts its event rows.
func (e *Env) ledgerless() bool { return e.Idempotency == idempotencyObjectVersion }

// byObjectVersion reports whether acknowledged ordered updates are reconciled
// against the key their object holds.
func (e *Env) byObjectVersion() bool {
	return e.Idempotency == idempotencyObjectVersion || e.Idempotency == idempotencyBoth
}

// LedgerReason says why g cannot judge a receiver without an event ledger
// ("" when it can): `validate` lists it beside the capabilities' reasons.
func (e *Env) LedgerReason(g *Guarantee) string { return e.ledgerReason(g) }

// ledgerReason says why a guarantee that counts event rows cannot judge a
// receiver without an event ledger ("" when it can).
func (e *Env) ledgerReason(g *Guarantee) string {
	if !e.ledgerless() || objectVersionJudged[g.ID] {
		return ""
	}
	for _, r := range g.Reads {
		if r.Query == queryEventRows {
			why := ledgerOnlyWhy[g.ID]
			if why == "" {
				why = "its events are judged by their event rows"
			}
			return fmt.Sprintf("target.idempotency is object-version: the receiver keeps no event ledger, and %s counts an event's rows (event_rows): %s", g.ID, why)
		}
	}
	return ""
}

// orderedKey is one ordered update or deletion the scenario sent: its object
// and ordering key, as the state query returns it once applied.
type orderedKey struct {
	obj    string
	key    int64
	delete bool
}

func (o orderedKey) String() string {
	if o.delete {
		return fmt.Sprintf("%s %d delete", o.obj, o.key)
	}
	return fmt.Sprintf("%s %d", o.obj, o.key)
}

func parseOrderedKey(s string) (orderedKey, bool) {
	f := strings.Fields(s)
	if len(f) < 2 || len(f) > 3 || (len(f) == 3 && f[2] != "delete") {
		return orderedKey{}, false
	}
	k, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return orderedKey{}, false
	}
	return orderedKey{obj: f[0], key: k, delete: len(f) == 3}, true
}

// noteOrdered records what reconciling by object version needs of an ordered
// event: its object and key, and whether it deletes.
func (s *session) noteOrdered(ep Endpoint, o *vocab.Ordered, ev profiles.Event, del bool) {
	k := profiles.EventKey(ep.Profile, ev)
	ok := orderedKey{obj: ev.ObjectID, key: orderValue(o, ev), delete: del}
	s.common(func(c *commonFacts) {
		if c.OrderKeys == nil {
			c.OrderKeys = map[string]string{}
		}
		c.OrderKeys[KeyString(k)] = ok.String()
	})
}

// visible reports whether an acknowledged ordered event's effect shows in the
// object's last read, or is provably superseded: the object holds its key or
// a newer one (a tombstone's included), or it was deleted by an acknowledged
// deletion no older than it. A deletion shows as no row or as a key at least
// its own.
func visible(ev orderedKey, o history.Observation, ackedDeletes []int64) bool {
	if ev.delete {
		return !o.Found || o.Version >= ev.key
	}
	if o.Found {
		return o.Version >= ev.key
	}
	for _, d := range ackedDeletes {
		if d >= ev.key {
			return true
		}
	}
	return false
}

// reconcile reads, for every event key the scenario delivered that the receiver
// should have stored, its event rows (and the effects of credit-like events), so
// the checker can hold them against the acknowledged, failed and unknown
// attempts; for an object-version receiver, the object of every ordered update
// instead. Keys read concurrently share one settle deadline.
func (s *session) reconcile() {
	type item struct {
		k     profiles.Key
		acked bool
		cash  bool
	}
	voc := s.env.vocabulary()
	// The checker reads what counts as stored, and what applies once, from
	// the history alone.
	s.common(func(c *commonFacts) {
		c.HandledTypes = append(words{}, voc.HandledTypes()...)
		if voc.Effect != nil {
			c.EffectType = voc.Effect.Type
		}
		if rs := voc.AllEffects(); len(rs) > 1 {
			c.EffectTypes = words{}
			for _, r := range rs {
				c.EffectTypes = append(c.EffectTypes, r.Type)
			}
		}
		if s.env.byObjectVersion() {
			c.Idempotency = s.env.Idempotency
		}
	})
	expired := map[profiles.Key]bool{}
	s.mu.Lock()
	for _, k := range s.expired {
		expired[k] = true
	}
	s.mu.Unlock()
	var items []*item
	seen := map[profiles.Key]*item{}
	for _, a := range s.run.attemptsOf(s.index) {
		if a.Key.EventID == "" || invalid(a) || !voc.Handled(a.EventType) || expired[a.Key] {
			continue
		}
		it := seen[a.Key]
		if it == nil {
			it = &item{k: a.Key, cash: voc.EffectRoleOf(a.EventType) != nil}
			seen[a.Key] = it
			items = append(items, it)
		}
		it.acked = it.acked || acked(a)
	}
	if len(expired) > 0 {
		keys := make(lines, 0, len(expired))
		for k := range expired {
			keys = append(keys, KeyString(k))
		}
		sort.Strings(keys)
		s.common(func(c *commonFacts) { c.Expired = keys })
	}
	ledger := !s.env.ledgerless()
	deadline := time.Now().Add(s.settleFor())
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	var first *stop
	var mu sync.Mutex
	for _, it := range items {
		if !ledger && !it.cash {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if st := catch(func() {
				if ledger {
					rows := s.rows(it.k, phaseReconcile)
					s.mu.Lock()
					waited := s.waited[it.k]
					s.mu.Unlock()
					// An asynchronous (inbox) receiver may store a moment after its 2xx.
					for it.acked && rows == 0 && !waited && time.Now().Before(deadline) && s.ctx.Err() == nil {
						time.Sleep(50 * time.Millisecond)
						rows = s.rows(it.k, phaseReconcile)
					}
				}
				if it.cash {
					hint := 0
					if !ledger && it.acked {
						hint = 1 // the effect is what shows the event was applied
					}
					s.settleUntil(deadline, hint, func() int { return s.effects(it.k, phaseReconcile) })
				}
			}); st != nil {
				mu.Lock()
				if first == nil {
					first = st
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if first != nil {
		panic(*first)
	}
	if s.env.byObjectVersion() {
		acks := map[profiles.Key]bool{}
		for _, it := range items {
			acks[it.k] = it.acked
		}
		s.reconcileObjects(acks, deadline)
	}
}

// reconcileObjects reads, once, the object of every ordered update or
// deletion the scenario delivered, re-read until each acknowledged one shows
// (an asynchronous receiver may apply a moment after its 2xx) or the settle
// period ends. The checker judges the last read.
func (s *session) reconcileObjects(acks map[profiles.Key]bool, deadline time.Time) {
	s.mu.Lock()
	recorded := map[string]orderedKey{}
	for k, v := range s.facts.OrderKeys {
		if ok, good := parseOrderedKey(v); good {
			recorded[k] = ok
		}
	}
	s.mu.Unlock()
	type object struct {
		src, account string
		acked        []orderedKey
		deletes      []int64
	}
	objs := map[string]*object{}
	var names []string
	for k, acked := range acks {
		ok, found := recorded[KeyString(k)]
		if !found {
			continue
		}
		o := objs[ok.obj]
		if o == nil {
			o = &object{src: k.Source, account: k.Account}
			objs[ok.obj] = o
			names = append(names, ok.obj)
		}
		if acked {
			o.acked = append(o.acked, ok)
			if ok.delete {
				o.deletes = append(o.deletes, ok.key)
			}
		}
	}
	sort.Strings(names)
	if len(names) > 0 {
		s.settled()
	}
	for _, name := range names {
		o := objs[name]
		for {
			r := s.readNow(queryObject, phaseReconcile, objParams(o.src, o.account, name), func(ctx context.Context, ob *history.Observation) error {
				var err error
				ob.Version, ob.Status, ob.Found, err = s.env.Observer.Object(ctx, o.src, o.account, name)
				return err
			})
			all := true
			for _, ev := range o.acked {
				all = all && visible(ev, r, o.deletes)
			}
			if all || !s.env.Acceptance.Async || !time.Now().Before(deadline) || s.ctx.Err() != nil {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// reconcile judges every delivered key's attempts against its reconciliation
// read. Keys whose attempts all ended unknown and that are present count as
// recovered. An object-version receiver's ordered updates are judged by the
// key their object holds; its other events, but credit-like ones, by their
// own scenarios.
func reconcile(v *view) {
	type tally struct {
		acked, failed, unknown int
		cash                   bool
	}
	expired := map[string]bool{}
	for _, k := range v.common.Expired {
		expired[k] = true
	}
	handled := map[string]bool{}
	for _, t := range vocab.BuiltinVocabulary().HandledTypes() {
		handled[t] = true
	}
	effectType := vocab.TypeCredit
	if v.common.HandledTypes != nil {
		handled = map[string]bool{}
		for _, t := range v.common.HandledTypes {
			handled[t] = true
		}
		effectType = v.common.EffectType
	}
	// Every effect role's events apply at most once, the first's or not.
	effectTypes := map[string]bool{effectType: effectType != ""}
	for _, t := range v.common.EffectTypes {
		effectTypes[t] = true
	}
	ledger := v.common.Idempotency != idempotencyObjectVersion
	byObject := v.common.Idempotency == idempotencyObjectVersion || v.common.Idempotency == idempotencyBoth
	var order []profiles.Key
	byKey := map[profiles.Key]*tally{}
	for _, a := range v.attempts {
		if a.Key.EventID == "" || invalid(a) || !handled[a.EventType] || expired[KeyString(a.Key)] {
			continue
		}
		t := byKey[a.Key]
		if t == nil {
			t = &tally{cash: effectTypes[a.EventType]}
			byKey[a.Key] = t
			order = append(order, a.Key)
		}
		switch a.Outcome {
		case history.OutcomeAcknowledged:
			t.acked++
		case history.OutcomeUnknown:
			t.unknown++
		default:
			t.failed++
		}
	}
	// Per object, the last reconciliation read and the acknowledged deletions.
	objects := map[string]history.Observation{}
	for _, o := range v.reads(queryObject, phaseReconcile) {
		objects[o.Params[3]] = o
	}
	deletes := map[string][]int64{}
	if byObject {
		for _, k := range order {
			if ok, found := parseOrderedKey(v.common.OrderKeys[KeyString(k)]); found && ok.delete && byKey[k].acked > 0 {
				deletes[ok.obj] = append(deletes[ok.obj], ok.key)
			}
		}
	}
	var ok, lost, dup, recovered, superseded, byScenario int
	for _, k := range order {
		t := byKey[k]
		if byObject {
			if ev, found := parseOrderedKey(v.common.OrderKeys[KeyString(k)]); found {
				o, read := objects[ev.obj]
				switch {
				case !read:
					v.fail("history: %s has no reconciliation read of object %s for %s", v.sc.Name, ev.obj, KeyString(k))
					return
				case t.acked > 0 && !visible(ev, o, deletes[ev.obj]):
					lost++
					what := "update"
					if ev.delete {
						what = "deletion"
					}
					v.deviate(codeReconcileLost, "reconciliation: %s lost: acknowledged %d time(s), its %s of %s (key %d) neither visible nor superseded: the object reads %s",
						KeyString(k), t.acked, what, ev.obj, ev.key, objectText(o))
					continue
				case t.acked > 0 && o.Found && o.Version > ev.key && !ev.delete:
					superseded++
				}
				if !ledger {
					ok++
					continue
				}
			}
		}
		if ledger {
			rows, found := v.read(queryEventRows, phaseReconcile, keyParams(k))
			if !found {
				v.fail("history: %s has no reconciliation read for %s", v.sc.Name, KeyString(k))
				return
			}
			switch {
			case t.acked > 0 && rows.Count == 0:
				lost++
				v.deviate(codeReconcileLost, "reconciliation: %s lost: acknowledged %d time(s), no event row", KeyString(k), t.acked)
			case rows.Count > 1:
				dup++
				v.deviate(codeReconcileDup, "reconciliation: %s duplicated: %d event rows", KeyString(k), rows.Count)
			case t.acked == 0 && t.unknown > 0 && rows.Count == 1:
				recovered++
			default:
				ok++
			}
		}
		if t.cash {
			eff, found := v.read(queryEffects, phaseReconcile, keyParams(k))
			switch {
			case found && eff.Count > 1 && v.common.EffectsBlind == "":
				v.deviate(codeReconcileTwice, "reconciliation: %s applied %d times (acknowledged %d, failed %d, unknown %d attempts)", KeyString(k), eff.Count, t.acked, t.failed, t.unknown)
			case !ledger && !found:
				v.fail("history: %s has no reconciliation read of the effects of %s", v.sc.Name, KeyString(k))
				return
			case !ledger && t.acked > 0 && eff.Count == 0:
				lost++
				v.deviate(codeReconcileLost, "reconciliation: %s lost: acknowledged %d time(s), no effect", KeyString(k), t.acked)
			case !ledger:
				ok++
			}
		} else if !ledger {
			byScenario++
		}
	}
	if n := ok + lost + dup + recovered; n > 0 {
		if ledger {
			v.note("reconciliation of %d event key(s) against the rows: %d consistent, %d recovered (unknown outcome, present), %d lost, %d duplicated", n, ok, recovered, lost, dup)
		} else {
			v.note("reconciliation of %d event key(s) by object version and effects: %d consistent (%d superseded by a newer key), %d lost", n, ok, superseded, lost)
		}
	}
	if byScenario > 0 {
		v.note("%d event key(s) of a lifecycle are judged by their scenario's state reads (an object-version receiver keeps no event rows to reconcile them by)", byScenario)
	}
	if v.common.EffectsBlind != "" {
		// Not a reason to withhold the guarantee's own verdict: the
		// reconciliation only adds to it.
		v.note("reconciliation did not check for effects applied twice: %s", v.common.EffectsBlind)
	}
}

// BadInput reports whether an attempt's faults make the delivery invalid: such
// keys must leave nothing, which their scenarios check themselves.
func BadInput(faults []string) bool {
	for _, f := range faults {
		for _, b := range []string{"tamper", "wrong_secret", "missing_signature", "missing_id", "malformed_json", "oversize", "stale_by",
			"alter:", "signature:prefix", "signature:truncate", "signature:all-invalid", "handshake"} {
			if strings.HasPrefix(f, b) {
				return true
			}
		}
	}
	return false
}

// invalid reports whether an attempt was an invalid delivery: by its faults,
// or sent as a derived negative (ACK-9's future timestamp carries the same
// fault as a legitimate delivery signed a little ahead).
func invalid(a history.Attempt) bool {
	return BadInput(a.Faults) || strings.HasPrefix(a.Role, roleDerived)
}

// expire marks k as purged on purpose, so reconciliation does not call it lost.
func (s *session) expire(k profiles.Key) {
	s.mu.Lock()
	s.expired = append(s.expired, k)
	s.mu.Unlock()
}
