package scenarios

import (
	"sort"
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
	codeReconcileLost  = Code{"reconcile.lost", "an acknowledged event has no event row"}
	codeReconcileDup   = Code{"reconcile.duplicated", "an event key has more than one event row"}
	codeReconcileTwice = Code{"reconcile.applied-twice", "a credit-like event was applied more than once"}
)

var reconcileCodes = []Code{codeReconcileLost, codeReconcileDup, codeReconcileTwice}

// phaseReconcile is the read of every delivered key after a scenario ends.
const phaseReconcile = "reconcile"

// reconcile reads, for every event key the scenario delivered that the receiver
// should have stored, its event rows (and the effects of credit-like events), so
// the checker can hold them against the acknowledged, failed and unknown
// attempts. Keys read concurrently share one settle deadline.
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
			it = &item{k: a.Key, cash: voc.Effect != nil && a.EventType == voc.Effect.Type}
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
	deadline := time.Now().Add(s.settleFor())
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	var first *stop
	var mu sync.Mutex
	for _, it := range items {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if st := catch(func() {
				rows := s.rows(it.k, phaseReconcile)
				s.mu.Lock()
				waited := s.waited[it.k]
				s.mu.Unlock()
				// An asynchronous (inbox) receiver may store a moment after its 2xx.
				for it.acked && rows == 0 && !waited && time.Now().Before(deadline) && s.ctx.Err() == nil {
					time.Sleep(50 * time.Millisecond)
					rows = s.rows(it.k, phaseReconcile)
				}
				if it.cash {
					s.effects(it.k, phaseReconcile)
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
}

// reconcile judges every delivered key's attempts against its reconciliation
// read. Keys whose attempts all ended unknown and that are present count as
// recovered.
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
	var order []profiles.Key
	byKey := map[profiles.Key]*tally{}
	for _, a := range v.attempts {
		if a.Key.EventID == "" || invalid(a) || !handled[a.EventType] || expired[KeyString(a.Key)] {
			continue
		}
		t := byKey[a.Key]
		if t == nil {
			t = &tally{cash: effectType != "" && a.EventType == effectType}
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
	var ok, lost, dup, recovered int
	for _, k := range order {
		t := byKey[k]
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
		if t.cash && v.common.EffectsBlind == "" {
			if eff, found := v.read(queryEffects, phaseReconcile, keyParams(k)); found && eff.Count > 1 {
				v.deviate(codeReconcileTwice, "reconciliation: %s applied %d times (acknowledged %d, failed %d, unknown %d attempts)", KeyString(k), eff.Count, t.acked, t.failed, t.unknown)
			}
		}
	}
	if n := ok + lost + dup + recovered; n > 0 {
		v.note("reconciliation of %d event key(s) against the rows: %d consistent, %d recovered (unknown outcome, present), %d lost, %d duplicated", n, ok, recovered, lost, dup)
		if v.common.EffectsBlind != "" {
			// Not a reason to withhold the guarantee's own verdict: the
			// reconciliation only adds to it.
			v.note("reconciliation did not check for effects applied twice: %s", v.common.EffectsBlind)
		}
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
